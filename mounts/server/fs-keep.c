/* fs-keep.c — kept copies: the old content of a file that rw-nodelete let a rename replace, or
 * that the person approved deleting, copied outside the share before it goes.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "fs-server-private.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "corral-glib-compat.h"

/* Copies a regular file's content to the keep folder (rw-nodelete replacements, approved
 * deletions) and records where it went; audit_path names it in the share. */
int
fs_keep_copy (FsServer *s, FsShare *share, int dirfd, const char *name, const char *audit_path)
{
        g_autofree char *dir = NULL, *dest = NULL, *stamp = NULL;
        g_autoptr (GDateTime) now = g_date_time_new_now_utc ();
        g_autofd int in = -1, out = -1;
        struct stat st;

        if (!s->keep_dir)
                return -EPERM;
        in = openat (dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (in < 0)
                return -errno;
        if (fstat (in, &st) < 0)
                return -errno;
        if (!S_ISREG (st.st_mode))
                return -EPERM;

        dir = g_build_filename (s->keep_dir, share->name, NULL);
        if (g_mkdir_with_parents (dir, 0700) < 0)
                return -errno;
        stamp = g_date_time_format (now, "%Y%m%dT%H%M%S");
        dest = g_strdup_printf ("%s/%s-%u-%s", dir, stamp, ++s->keep_serial, name);
        out = open (dest, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (out < 0)
                return -errno;
        for (;;) {
                ssize_t n = copy_file_range (in, NULL, out, NULL, 1 << 20, 0);
                if (n == 0)
                        break;
                if (n < 0) {
                        char buf[65536];
                        if (errno != EXDEV && errno != ENOSYS && errno != EINVAL)
                                return -errno;
                        n = read (in, buf, sizeof buf);
                        if (n < 0)
                                return -errno;
                        if (n == 0)
                                break;
                        if (write (out, buf, (size_t) n) != n)
                                return errno ? -errno : -EIO;
                }
        }
        if (fsync (out) < 0)
                return -errno;
        {
                FsAuditRecord rec = { .share = share->name,
                                      .op = "keep",
                                      .path = audit_path,
                                      .path2 = dest,
                                      .result = "ok",
                                      .size = st.st_size };
                fs_audit_write (s->audit, &rec);
        }
        return 0;
}
