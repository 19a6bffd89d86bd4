/* xfer.c — file.read and file.write: file contents as DATA on a channel, under credit.
 *
 * Only regular files are read or written: opens use O_NONBLOCK so that a FIFO cannot block the
 * agent, and the type is checked on the open fd. file.write "replace" writes a temporary file in
 * the same directory, fsyncs it and renames it over the target, so the target always holds the
 * whole old or the whole new content; if the transfer does not reach EOF (CLOSE, violation, end of
 * the session) the temporary file is removed and the target is untouched.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "agent.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
        uint64_t id; /* the request, answered at the end */
        int fd;
        uint64_t offset;
        uint64_t remaining; /* UINT64_MAX: to EOF */
        uint64_t sent;
} FileRead;

typedef struct {
        uint64_t id;
        int fd;
        int dirfd; /* replace: the target's directory */
        char *tmp_name; /* replace: temporary name in dirfd, NULL once renamed */
        bool tmp_named; /* replace: tmp_name exists in dirfd (O_TMPFILE files get it at commit) */
        char *base_name; /* replace: target name in dirfd */
        uint64_t written;
} FileWrite;

static uint8_t buf[AGENT_READ_CHUNK];

/* file.read ---------------------------------------------------------------------------------- */

static void
read_free (FileRead *r)
{
        if (r->fd >= 0)
                close (r->fd);
        free (r);
}

static void
read_finish (Agent *a, Channel *c)
{
        FileRead *r = c->owner;
        cJSON *res;

        agent_send_frame (a, PROTO_FRAME_DATA, PROTO_STREAM_STDOUT | PROTO_DATA_EOF, c->id, NULL,
                          0);
        res = cJSON_CreateObject ();
        if (res)
                json_add_number (res, "size", (double) r->sent);
        agent_respond (a, r->id, res);
        read_free (r);
        channel_free (a, c);
}

static void
read_pump (Agent *a, Channel *c)
{
        FileRead *r = c->owner;
        bool done = r->remaining == 0;

        while (!done && c->credit > 0 && !a->out_full) {
                size_t want = sizeof buf;
                ssize_t n;

                if (want > c->credit)
                        want = (size_t) c->credit;
                if (want > r->remaining)
                        want = (size_t) r->remaining;
                n = pread (r->fd, buf, want, (off_t) r->offset);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        uint32_t id = c->id;

                        agent_respond_errno (a, r->id, errno, NULL);
                        read_free (r);
                        channel_free (a, c);
                        agent_send_frame (a, PROTO_FRAME_CLOSE, 0, id, NULL, 0);
                        return;
                }
                if (n == 0)
                        break; /* end of file (it may have shrunk) */
                agent_send_frame (a, PROTO_FRAME_DATA, PROTO_STREAM_STDOUT, c->id, buf, (size_t) n);
                c->credit -= (uint64_t) n;
                r->offset += (uint64_t) n;
                r->sent += (uint64_t) n;
                if (r->remaining != UINT64_MAX)
                        r->remaining -= (uint64_t) n;
                done = r->remaining == 0;
        }
        if (!done && c->credit == 0) {
                struct stat st;

                /* Out of credit exactly at the end of the file: finish now instead of waiting
                 * for credit that the host has no reason to send. */
                if (fstat (r->fd, &st) == 0 && r->offset >= (uint64_t) st.st_size)
                        done = true;
        }
        if (done || (c->credit > 0 && !a->out_full))
                read_finish (a, c);
}

static void
read_data (Agent *a, Channel *c, unsigned stream, bool eof, const uint8_t *p, size_t n)
{
        /* Nothing to receive on a read; the bytes are consumed by dropping them. */
        channel_grant (a, c, n);
}

static void
read_drop (Agent *a, Channel *c, bool host_close)
{
        FileRead *r = c->owner;

        agent_respond_error (a, r->id, "io", "transfer cancelled", ECANCELED);
        read_free (r);
}

static const ChannelOps read_ops = { .data = read_data, .pump = read_pump, .drop = read_drop };

/* Opens path for I/O without blocking on FIFOs and refuses anything but a regular file. */
static int
open_regular (const char *path, int flags, mode_t mode)
{
        struct stat st;
        int fd = open (path, flags | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, mode);

        if (fd < 0)
                return -errno;
        if (fstat (fd, &st) < 0 || !S_ISREG (st.st_mode)) {
                int e = S_ISDIR (st.st_mode) ? EISDIR : EINVAL;

                close (fd);
                return -e;
        }
        return fd;
}

static void
respond_open_error (Agent *a, uint64_t id, int err)
{
        if (err == EINVAL || err == ENXIO)
                agent_respond_error (a, id, "invalid-request", "not a regular file", err);
        else
                agent_respond_errno (a, id, err, NULL);
}

void
method_file_read (Agent *a, uint64_t id, const cJSON *params)
{
        const char *path = path_param (a, id, params, "path");
        int64_t offset = 0, length = -1;
        uint32_t channel;
        FileRead *r;
        Channel *c;
        int fd, rc;

        if (!path || int_param (a, id, params, "offset", 0, (int64_t) PROTO_MAX_ID, &offset) < 0 ||
            int_param (a, id, params, "length", 0, (int64_t) PROTO_MAX_ID, &length) < 0 ||
            !channel_param (a, id, params, &channel))
                return;
        fd = open_regular (path, O_RDONLY, 0);
        if (fd < 0) {
                respond_open_error (a, id, -fd);
                return;
        }
        r = calloc (1, sizeof *r);
        if (!r) {
                close (fd);
                agent_respond_error (a, id, "internal", "out of memory", ENOMEM);
                return;
        }
        r->id = id;
        r->fd = fd;
        r->offset = (uint64_t) offset;
        r->remaining = length < 0 ? UINT64_MAX : (uint64_t) length;
        rc = channel_new (a, channel, &read_ops, r, &c);
        if (rc < 0) {
                read_free (r);
                agent_respond_errno (a, id, -rc, NULL);
                return;
        }
        read_pump (a, c);
}

/* file.write --------------------------------------------------------------------------------- */

static void
write_free (FileWrite *w)
{
        if (w->fd >= 0)
                close (w->fd);
        if (w->tmp_named && w->dirfd >= 0)
                unlinkat (w->dirfd, w->tmp_name, 0);
        if (w->dirfd >= 0)
                close (w->dirfd);
        free (w->tmp_name);
        free (w->base_name);
        free (w);
}

/* Answers the request with an error and abandons the transfer (CLOSE to the host). */
static void
write_fail (Agent *a, Channel *c, int err)
{
        FileWrite *w = c->owner;
        uint32_t id = c->id;

        agent_respond_errno (a, w->id, err, NULL);
        write_free (w);
        channel_free (a, c);
        agent_send_frame (a, PROTO_FRAME_CLOSE, 0, id, NULL, 0);
}

/* Gives an O_TMPFILE inode its temporary name, right before the rename. */
static int
link_anonymous (FileWrite *w)
{
        char proc_path[64];

        if (linkat (w->fd, "", w->dirfd, w->tmp_name, AT_EMPTY_PATH) == 0)
                return 0;
        /* AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH; /proc works for the file's owner. */
        snprintf (proc_path, sizeof proc_path, "/proc/self/fd/%d", w->fd);
        if (linkat (AT_FDCWD, proc_path, w->dirfd, w->tmp_name, AT_SYMLINK_FOLLOW) < 0)
                return -errno;
        return 0;
}

static int
write_commit (FileWrite *w)
{
        int r;

        if (fsync (w->fd) < 0)
                return -errno;
        if (!w->tmp_name)
                return 0;
        if (!w->tmp_named) {
                r = link_anonymous (w);
                if (r < 0)
                        return r;
                w->tmp_named = true;
        }
        if (renameat (w->dirfd, w->tmp_name, w->dirfd, w->base_name) < 0)
                return -errno;
        w->tmp_named = false;
        free (w->tmp_name);
        w->tmp_name = NULL;
        /* The rename itself must reach the disk too. */
        if (fsync (w->dirfd) < 0)
                return -errno;
        return 0;
}

static void
write_data (Agent *a, Channel *c, unsigned stream, bool eof, const uint8_t *p, size_t n)
{
        FileWrite *w = c->owner;
        size_t done = 0;
        cJSON *res;
        int r;

        while (done < n) {
                ssize_t k = write (w->fd, p + done, n - done);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0) {
                        write_fail (a, c, errno);
                        return;
                }
                done += (size_t) k;
        }
        w->written += n;
        if (!eof) {
                channel_grant (a, c, n);
                return;
        }
        r = write_commit (w);
        if (r < 0) {
                write_fail (a, c, -r);
                return;
        }
        res = cJSON_CreateObject ();
        if (res)
                json_add_number (res, "size", (double) w->written);
        agent_respond (a, w->id, res);
        write_free (w);
        channel_free (a, c);
}

static void
write_pump (Agent *a, Channel *c)
{
}

static void
write_drop (Agent *a, Channel *c, bool host_close)
{
        FileWrite *w = c->owner;

        agent_respond_error (a, w->id, "io", "transfer cancelled before its end", ECANCELED);
        write_free (w);
}

static const ChannelOps write_ops = { .data = write_data, .pump = write_pump, .drop = write_drop };

/* replace: the real target (a symlink is written through), its directory and a new temporary
 * file next to it, with the target's mode and owner when it exists. */
static int
open_replace (Agent *a, const char *path, int64_t perm, FileWrite *w)
{
        char hex[17], *resolved = NULL, *dcopy = NULL, *bcopy = NULL;
        const char *target = path;
        struct stat st;
        mode_t mode;
        bool exists;
        int r;

        if (lstat (path, &st) == 0 && S_ISLNK (st.st_mode)) {
                resolved = realpath (path, NULL);
                if (!resolved)
                        return -errno;
                target = resolved;
        }
        exists = stat (target, &st) == 0;
        if (exists && !S_ISREG (st.st_mode)) {
                r = S_ISDIR (st.st_mode) ? -EISDIR : -EINVAL;
                goto out;
        }
        dcopy = strdup (target);
        bcopy = strdup (target);
        r = proto_random_hex (hex, 8);
        if (!dcopy || !bcopy || r < 0) {
                r = r < 0 ? r : -ENOMEM;
                goto out;
        }
        w->base_name = strdup (basename (bcopy));
        /* Long names are shortened in the temporary name only. */
        if (!w->base_name || asprintf (&w->tmp_name, ".%.200s.corral-%s", w->base_name, hex) < 0) {
                w->tmp_name = NULL;
                r = -ENOMEM;
                goto out;
        }
        w->dirfd = open (dirname (dcopy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (w->dirfd < 0) {
                r = -errno;
                goto out;
        }
        mode = (mode_t) (perm >= 0 ? perm : exists ? (st.st_mode & 07777) : 0644);
        /* An unnamed O_TMPFILE inode vanishes by itself if the agent is killed mid-write, so no
         * stray temporary file is left next to the target; it gets a name only at commit. */
        w->fd = openat (w->dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, mode);
        if (w->fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
                w->fd = openat (w->dirfd, w->tmp_name,
                                O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
                w->tmp_named = w->fd >= 0;
        }
        if (w->fd < 0) {
                r = -errno;
                free (w->tmp_name);
                w->tmp_name = NULL;
                goto out;
        }
        if (exists && a->is_root && fchown (w->fd, st.st_uid, st.st_gid) < 0)
                agent_debug ("fchown: %s", strerror (errno));
        if (!exists && a->is_root && fstat (w->dirfd, &st) == 0 &&
            fchown (w->fd, st.st_uid, st.st_gid) < 0)
                agent_debug ("fchown: %s", strerror (errno));
        r = 0;
out:
        free (resolved);
        free (dcopy);
        free (bcopy);
        return r;
}

static int
open_append (Agent *a, const char *path, int64_t perm, FileWrite *w)
{
        int fd = open_regular (path, O_WRONLY | O_APPEND, 0);

        if (fd == -ENOENT) {
                fd = open_regular (path, O_WRONLY | O_APPEND | O_CREAT | O_EXCL,
                                   (mode_t) (perm >= 0 ? perm : 0644));
                if (fd >= 0)
                        file_inherit_owner (a, path);
        }
        if (fd < 0)
                return fd;
        w->fd = fd;
        return 0;
}

void
method_file_write (Agent *a, uint64_t id, const cJSON *params)
{
        const char *path = path_param (a, id, params, "path");
        const char *mode = "replace";
        int64_t perm = -1;
        uint32_t channel;
        FileWrite *w;
        Channel *c;
        int r;

        if (!path || int_param (a, id, params, "perm", 0, 07777, &perm) < 0 ||
            !channel_param (a, id, params, &channel))
                return;
        if (proto_json_get_string (params, "mode", 16, &mode) == -EINVAL ||
            (strcmp (mode, "replace") != 0 && strcmp (mode, "append") != 0)) {
                agent_respond_error (a, id, "invalid-request", "mode must be replace or append", 0);
                return;
        }
        w = calloc (1, sizeof *w);
        if (!w) {
                agent_respond_error (a, id, "internal", "out of memory", ENOMEM);
                return;
        }
        w->id = id;
        w->fd = w->dirfd = -1;
        r = strcmp (mode, "append") == 0 ? open_append (a, path, perm, w)
                                         : open_replace (a, path, perm, w);
        if (r == 0)
                r = channel_new (a, channel, &write_ops, w, &c);
        if (r < 0) {
                write_free (w);
                respond_open_error (a, id, -r);
        }
}
