/* files.c — file.stat, file.list, file.mkdir, file.move, file.remove.
 *
 * File operations run as the agent itself (root in the VM): by design, the host decides what may
 * be touched and the VM is the boundary. They are synchronous but bounded: no operation opens a
 * FIFO or device for I/O, listings and recursion have limits, and nothing follows a symlink
 * unless the request says so.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "agent.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_REMOVE_DEPTH 256
/* A listing answer must fit one frame; leave room for the envelope. */
#define LIST_BUDGET (PROTO_MAX_PAYLOAD - 4096)

static const char *
type_name (mode_t m)
{
        switch (m & S_IFMT) {
        case S_IFREG:
                return "file";
        case S_IFDIR:
                return "dir";
        case S_IFLNK:
                return "symlink";
        case S_IFIFO:
                return "fifo";
        case S_IFSOCK:
                return "socket";
        case S_IFCHR:
                return "char";
        case S_IFBLK:
                return "block";
        default:
                return "unknown";
        }
}

/* New files and directories belong to the owner of the directory they are created in, so that
 * what the host writes into the user's home stays usable by the user's processes. */
void
file_inherit_owner (Agent *a, const char *path)
{
        char *copy, *dir;
        struct stat st;

        if (!a->is_root)
                return;
        copy = strdup (path);
        if (!copy)
                return;
        dir = dirname (copy);
        if (stat (dir, &st) == 0 && (st.st_uid != 0 || st.st_gid != 0) &&
            lchown (path, st.st_uid, st.st_gid) < 0)
                agent_debug ("chown %s: %s", path, strerror (errno));
        free (copy);
}

void
method_file_stat (Agent *a, uint64_t id, const cJSON *params)
{
        const char *path = path_param (a, id, params, "path");
        bool follow = false;
        struct stat st;
        cJSON *res;

        if (!path || bool_param (a, id, params, "follow", &follow) < 0)
                return;
        if ((follow ? stat (path, &st) : lstat (path, &st)) < 0) {
                agent_respond_errno (a, id, errno, NULL);
                return;
        }
        res = cJSON_CreateObject ();
        if (res) {
                cJSON_AddStringToObject (res, "type", type_name (st.st_mode));
                json_add_number (res, "size", (double) st.st_size);
                json_add_number (res, "mode", st.st_mode & 07777);
                json_add_number (res, "uid", st.st_uid);
                json_add_number (res, "gid", st.st_gid);
                /* Nanoseconds since 1970 exceed 2^53, so the two parts travel separately. */
                json_add_number (res, "mtime_s", (double) st.st_mtim.tv_sec);
                json_add_number (res, "mtime_nsec", (double) st.st_mtim.tv_nsec);
        }
        if (res && S_ISLNK (st.st_mode)) {
                char target[AGENT_PATH_MAX];
                ssize_t n = readlink (path, target, sizeof target);

                if (n >= 0 && (size_t) n < sizeof target)
                        json_add_string_bytes (res, "target", target, (size_t) n);
        }
        agent_respond (a, id, res);
}

void
method_file_list (Agent *a, uint64_t id, const cJSON *params)
{
        const char *path = path_param (a, id, params, "path");
        cJSON *res, *arr;
        struct dirent *de;
        size_t budget = LIST_BUDGET, count = 0;
        bool truncated = false;
        DIR *d;
        int fd;

        if (!path)
                return;
        fd = open (path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0 || !(d = fdopendir (fd))) {
                int e = errno;

                if (fd >= 0)
                        close (fd);
                agent_respond_errno (a, id, e, NULL);
                return;
        }
        res = cJSON_CreateObject ();
        arr = res ? cJSON_AddArrayToObject (res, "entries") : NULL;
        while (arr && (de = readdir (d))) {
                size_t len = strlen (de->d_name), cost;
                struct stat st;
                cJSON *e;

                if (strcmp (de->d_name, ".") == 0 || strcmp (de->d_name, "..") == 0)
                        continue;
                /* The name as serialised, plus keys, type and size. */
                cost = json_cost (de->d_name, len) + 64;
                if (count == AGENT_MAX_LIST || cost > budget) {
                        truncated = true;
                        break;
                }
                budget -= cost;
                count++;
                e = cJSON_CreateObject ();
                if (!e)
                        break;
                cJSON_AddItemToArray (arr, e);
                json_add_string_bytes (e, "name", de->d_name, len);
                if (fstatat (dirfd (d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
                        cJSON_AddStringToObject (e, "type", type_name (st.st_mode));
                        json_add_number (e, "size", (double) st.st_size);
                } else {
                        cJSON_AddStringToObject (e, "type", "unknown");
                        json_add_number (e, "size", 0);
                }
        }
        closedir (d);
        if (res)
                cJSON_AddBoolToObject (res, "truncated", truncated);
        agent_respond (a, id, res);
}

static int
mkdir_one (Agent *a, const char *path, mode_t perm, bool exist_ok)
{
        struct stat st;

        if (mkdir (path, perm) == 0) {
                file_inherit_owner (a, path);
                return 0;
        }
        if (errno != EEXIST || !exist_ok)
                return -errno;
        if (stat (path, &st) < 0)
                return -errno;
        return S_ISDIR (st.st_mode) ? 0 : -ENOTDIR;
}

static int
mkdir_parents (Agent *a, const char *path, mode_t perm)
{
        char *copy = strdup (path);
        int r = 0;

        if (!copy)
                return -ENOMEM;
        for (char *s = copy + 1; *s && r == 0; s++) {
                if (*s != '/')
                        continue;
                *s = '\0';
                r = mkdir_one (a, copy, perm, true);
                *s = '/';
        }
        if (r == 0)
                r = mkdir_one (a, path, perm, true);
        free (copy);
        return r;
}

void
method_file_mkdir (Agent *a, uint64_t id, const cJSON *params)
{
        const char *path = path_param (a, id, params, "path");
        bool parents = false;
        int64_t perm = 0755;
        int r;

        if (!path || bool_param (a, id, params, "parents", &parents) < 0 ||
            int_param (a, id, params, "perm", 0, 07777, &perm) < 0)
                return;
        r = parents ? mkdir_parents (a, path, (mode_t) perm)
                    : mkdir_one (a, path, (mode_t) perm, false);
        if (r < 0)
                agent_respond_errno (a, id, -r, NULL);
        else
                agent_respond (a, id, NULL);
}

void
method_file_move (Agent *a, uint64_t id, const cJSON *params)
{
        const char *from = path_param (a, id, params, "from");
        const char *to = from ? path_param (a, id, params, "to") : NULL;
        bool overwrite = false;
        int r;

        if (!to || bool_param (a, id, params, "overwrite", &overwrite) < 0)
                return;
        r = renameat2 (AT_FDCWD, from, AT_FDCWD, to, overwrite ? 0 : RENAME_NOREPLACE);
        if (r < 0 && !overwrite && errno == EINVAL) {
                /* A file system without RENAME_NOREPLACE: check, then rename (racy, but the
                 * only way there). */
                struct stat st;

                if (lstat (to, &st) == 0)
                        errno = EEXIST;
                else
                        r = rename (from, to);
        }
        if (r < 0)
                agent_respond_errno (a, id, errno, NULL);
        else
                agent_respond (a, id, NULL);
}

/* Removes the contents of the directory dfd, then the directory name in parent. Never follows
 * a symlink (O_NOFOLLOW, AT_SYMLINK_NOFOLLOW) and never crosses into another file system. */
static int
remove_tree (int parent, const char *name, dev_t dev, int depth)
{
        struct dirent *de;
        struct stat st;
        DIR *d;
        int fd, r = 0;

        if (depth > MAX_REMOVE_DEPTH)
                return -ELOOP;
        fd = openat (parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0)
                return -errno;
        if (fstat (fd, &st) < 0 || st.st_dev != dev) {
                close (fd);
                return -EXDEV;
        }
        d = fdopendir (fd);
        if (!d) {
                close (fd);
                return -errno;
        }
        while (r == 0 && (de = readdir (d))) {
                if (strcmp (de->d_name, ".") == 0 || strcmp (de->d_name, "..") == 0)
                        continue;
                if (fstatat (fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        r = errno == ENOENT ? 0 : -errno;
                else if (S_ISDIR (st.st_mode))
                        r = remove_tree (fd, de->d_name, dev, depth + 1);
                else if (unlinkat (fd, de->d_name, 0) < 0 && errno != ENOENT)
                        r = -errno;
        }
        closedir (d);
        if (r == 0 && unlinkat (parent, name, AT_REMOVEDIR) < 0)
                r = -errno;
        return r;
}

void
method_file_remove (Agent *a, uint64_t id, const cJSON *params)
{
        const char *path = path_param (a, id, params, "path");
        bool recursive = false;
        struct stat st;
        int r = 0;

        if (!path || bool_param (a, id, params, "recursive", &recursive) < 0)
                return;
        if (lstat (path, &st) < 0) {
                agent_respond_errno (a, id, errno, NULL);
                return;
        }
        if (!S_ISDIR (st.st_mode))
                r = unlink (path) < 0 ? -errno : 0;
        else if (!recursive)
                r = rmdir (path) < 0 ? -errno : 0;
        else if (strspn (path, "/") == strlen (path))
                r = -EPERM;
        else
                r = remove_tree (AT_FDCWD, path, st.st_dev, 0);
        if (r < 0)
                agent_respond_errno (a, id, -r, NULL);
        else
                agent_respond (a, id, NULL);
}
