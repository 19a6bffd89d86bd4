/* corral-unix.h — small unix helpers: connecting to a unix socket, writing a whole buffer,
 * fds 0-2 never left closed (plain C, for host and guest code).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <errno.h>
#include <fcntl.h>
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

/* Writes all len bytes, retrying after EINTR and short writes. Returns 0, or a negative errno
 * (-EIO when write returned 0). For blocking descriptors. */
static inline int
corral_write_all (int fd, const void *data, size_t len)
{
        const char *p = data;

        while (len > 0) {
                ssize_t n = write (fd, p, len);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        return -EIO;
                p += n;
                len -= (size_t) n;
        }
        return 0;
}

/* Opens /dev/null on whichever of fds 0-2 is closed, so that no descriptor a program opens later
 * becomes its stdin, stdout or stderr: a log line to a reused stderr would corrupt a channel, a
 * child given fds 0-2 by dup2 would get one of ours. 0, or -EBADF. Call first thing in main. */
static inline int
corral_ensure_std_fds (void)
{
        for (int fd = 0; fd < 3; fd++) {
                if (fcntl (fd, F_GETFD) >= 0)
                        continue;
                if (open ("/dev/null", O_RDWR) != fd)
                        return -EBADF;
        }
        return 0;
}
