/* corral-unix.h — connecting to a unix socket (plain C, for host and guest code).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* A close-on-exec stream socket connected to path, or a negative errno. nonblock: the socket
 * (and so the connect) does not block: a channel that has a client already never accepts, and
 * a full backlog answers EAGAIN instead of stalling the caller. */
static inline int
corral_unix_connect_full (const char *path, int nonblock)
{
        struct sockaddr_un sun = { .sun_family = AF_UNIX };
        int fd;

        if (strlen (path) >= sizeof sun.sun_path)
                return -ENAMETOOLONG;
        memcpy (sun.sun_path, path, strlen (path) + 1);
        fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);
        if (fd < 0)
                return -errno;
        if (connect (fd, (struct sockaddr *) &sun, sizeof sun) < 0) {
                int r = -errno;

                close (fd);
                return r;
        }
        return fd;
}

/* Returns a connected, close-on-exec stream socket, or a negative errno. */
static inline int
corral_unix_connect (const char *path)
{
        return corral_unix_connect_full (path, 0);
}
