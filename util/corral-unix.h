/* corral-unix.h — a blocking connect to a unix socket (plain C, for host and guest code).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* Returns a connected, close-on-exec stream socket, or a negative errno. */
static inline int
corral_unix_connect (const char *path)
{
        struct sockaddr_un sun = { .sun_family = AF_UNIX };
        int fd;

        if (strlen (path) >= sizeof sun.sun_path)
                return -ENAMETOOLONG;
        memcpy (sun.sun_path, path, strlen (path) + 1);
        fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (connect (fd, (struct sockaddr *) &sun, sizeof sun) < 0) {
                int r = -errno;

                close (fd);
                return r;
        }
        return fd;
}
