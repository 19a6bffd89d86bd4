/* fs-resolve.c — see fs-resolve.h.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "fs-resolve.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static int force_fallback = -1; /* -1: decide from the environment on first use */
static bool openat2_missing;

void
fs_resolve_force_fallback (bool force)
{
        force_fallback = force;
}

static bool
use_fallback (void)
{
        if (force_fallback < 0) {
                const char *e = getenv ("CORRAL_FS_NO_OPENAT2");
                force_fallback = e && *e && strcmp (e, "0") != 0;
        }
        return force_fallback || openat2_missing;
}

bool
fs_resolve_using_openat2 (void)
{
        return !use_fallback ();
}

static int
close_keep_errno (int fd)
{
        int errsv = errno;
        close (fd);
        errno = errsv;
        return -1;
}

static int
resolve_openat2 (int root_fd, const char *path, int flags, mode_t mode, int *ret_fd)
{
        struct open_how how = {
                .flags = (unsigned) (flags | O_CLOEXEC | O_NOFOLLOW),
                .mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
                .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
                           RESOLVE_NO_XDEV,
        };
        long fd;

        for (int attempt = 0; attempt < 16; attempt++) {
                fd = syscall (SYS_openat2, root_fd, path[0] ? path : ".", &how, sizeof how);
                if (fd >= 0) {
                        *ret_fd = (int) fd;
                        return 0;
                }
                if (errno == ENOSYS) {
                        openat2_missing = true;
                        return 1; /* caller falls back */
                }
                if (errno != EAGAIN && errno != EINTR)
                        return -errno;
        }
        return -EAGAIN;
}

/* Component walk: every step O_PATH | O_NOFOLLOW, a directory, on the root's device. */
static int
resolve_walk (int root_fd, dev_t root_dev, const char *path, int flags, mode_t mode, int *ret_fd)
{
        const char *p = path;
        int cur = -1, fd;
        struct stat st;

        if (!path[0]) {
                fd = openat (root_fd, ".", flags | O_CLOEXEC | O_NOFOLLOW, mode);
                if (fd < 0)
                        return -errno;
                *ret_fd = fd;
                return 0;
        }

        for (;;) {
                const char *slash = strchr (p, '/');
                char comp[NAME_MAX + 1];
                size_t len = slash ? (size_t) (slash - p) : strlen (p);
                int dir = cur < 0 ? root_fd : cur;

                if (len == 0 || len > NAME_MAX || (len == 1 && p[0] == '.') ||
                    (len == 2 && p[0] == '.' && p[1] == '.')) {
                        if (cur >= 0)
                                close (cur);
                        return -EINVAL;
                }
                memcpy (comp, p, len);
                comp[len] = '\0';

                if (!slash)
                        fd = openat (dir, comp, flags | O_CLOEXEC | O_NOFOLLOW, mode);
                else
                        fd = openat (dir, comp, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                if (fd < 0) {
                        int err = errno == ENOTDIR && slash ? -ELOOP : -errno;
                        /* O_NOFOLLOW | O_DIRECTORY on a symlink fails ENOTDIR: report it as
                         * the symlink it is, as openat2 does. */
                        if (slash && errno == ENOTDIR) {
                                struct stat lst;
                                if (fstatat (dir, comp, &lst, AT_SYMLINK_NOFOLLOW) == 0 &&
                                    !S_ISLNK (lst.st_mode))
                                        err = -ENOTDIR;
                        }
                        if (cur >= 0)
                                close (cur);
                        return err;
                }
                if (cur >= 0)
                        close (cur);
                cur = fd;
                if (fstat (cur, &st) < 0) {
                        int err = -errno;
                        close (cur);
                        return err;
                }
                if (st.st_dev != root_dev) {
                        close (cur);
                        return -EXDEV;
                }
                if (!slash)
                        break;
                p = slash + 1;
        }
        *ret_fd = cur;
        return 0;
}

int
fs_resolve_open (int root_fd, dev_t root_dev, const char *path, int flags, mode_t mode, int *ret_fd)
{
        int r;

        if (path[0] == '/')
                return -EINVAL;
        if (!use_fallback ()) {
                r = resolve_openat2 (root_fd, path, flags, mode, ret_fd);
                if (r <= 0)
                        return r;
        }
        return resolve_walk (root_fd, root_dev, path, flags, mode, ret_fd);
}

int
fs_reopen (int path_fd, int flags, int *ret_fd)
{
        char proc[64];
        struct stat before, after;
        int fd;

        if (fstat (path_fd, &before) < 0)
                return -errno;
        if (!S_ISREG (before.st_mode) && !S_ISDIR (before.st_mode))
                return -EACCES;

        snprintf (proc, sizeof proc, "/proc/self/fd/%d", path_fd);
        fd = open (proc, (flags & ~O_CREAT) | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        if (fstat (fd, &after) < 0 || after.st_dev != before.st_dev ||
            after.st_ino != before.st_ino) {
                close_keep_errno (fd);
                return -ESTALE;
        }
        *ret_fd = fd;
        return 0;
}
