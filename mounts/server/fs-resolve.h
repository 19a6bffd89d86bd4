/* fs-resolve.h — opening a path beneath a share's root without ever leaving it.
 *
 * The path is relative, made of components the protocol already validated (no "", ".", ".."
 * or '/' inside a component). Resolution never follows a symlink (a trailing one is opened
 * with O_PATH | O_NOFOLLOW as the link itself), never leaves the root, never crosses into
 * another mount. openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
 * RESOLVE_NO_XDEV) does it in the kernel; where openat2 is missing (Linux < 5.6) a walk of
 * openat(O_PATH | O_NOFOLLOW) per component checks each step.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

/* Opens path beneath root_fd (whose st_dev is root_dev). flags gets O_CLOEXEC | O_NOFOLLOW
 * added. "" opens the root itself. Returns 0 and *ret_fd, or a negative errno: -ELOOP (a
 * symlink on the way), -EXDEV (a mount point, or an attempt to leave the root), -ENOENT,
 * -ENOTDIR, ... */
int fs_resolve_open (
        int root_fd, dev_t root_dev, const char *path, int flags, mode_t mode, int *ret_fd);

/* Tests: force (or stop forcing) the per-component fallback walk. */
void fs_resolve_force_fallback (bool force);
bool fs_resolve_using_openat2 (void);

/* Re-opens the file behind an O_PATH fd with real access flags through /proc/self/fd, which
 * names exactly that inode (no path is looked up again). Refuses anything but regular files
 * and directories with -EACCES before opening. */
int fs_reopen (int path_fd, int flags, int *ret_fd);
