/* corral-glib-compat.h — small helpers GLib gained after Debian 12's 2.74.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <glib.h>
#include <glib/gstdio.h>

#if !GLIB_CHECK_VERSION(2, 76, 0)
static inline void
corral_close_fd_ptr (int *fd)
{
        if (*fd >= 0) {
                int errsv = errno;
                g_close (*fd, NULL);
                errno = errsv;
        }
}
#define g_autofd __attribute__ ((cleanup (corral_close_fd_ptr)))
#endif
