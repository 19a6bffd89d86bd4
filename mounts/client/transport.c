/* transport.c — the byte stream to corral-fsd: an inherited fd, a unix socket we connect to, or
 * a virtio-serial port (which the guest cannot close: the host may go away and come back at any
 * time, and says HELLO again when it does).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-fs.h"
#include "corral-unix.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

int64_t
fs_now_ms (void)
{
        struct timespec ts;

        clock_gettime (CLOCK_MONOTONIC, &ts);
        return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int
fd_prepare (int fd)
{
        int fl = fcntl (fd, F_GETFL);
        int fdfl = fcntl (fd, F_GETFD);

        if (fl < 0 || fdfl < 0 || fcntl (fd, F_SETFL, fl | O_NONBLOCK) < 0 ||
            fcntl (fd, F_SETFD, fdfl | FD_CLOEXEC) < 0)
                return -errno;
        return 0;
}

int
fs_transport_open (Fs *fs)
{
        int fd, r;

        r = proto_decoder_init (&fs->dec, 0);
        if (r < 0)
                return r;
        switch (fs->transport) {
        case FS_TRANSPORT_FD:
                fd = fs->opt_fd;
                break;
        case FS_TRANSPORT_UNIX:
                fd = corral_unix_connect (fs->address);
                break;
        case FS_TRANSPORT_SERIAL:
                fd = open (fs->address, O_RDWR | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
                if (fd < 0)
                        fd = -errno;
                break;
        default:
                return -EINVAL;
        }
        if (fd < 0)
                return fd;
        r = fd_prepare (fd);
        if (r < 0) {
                close (fd);
                return r;
        }
        fs->chan_fd = fd;
        fs->connected = true;
        return 0;
}

void
fs_transport_close (Fs *fs)
{
        fs_outq_clear (fs);
        if (fs->chan_fd >= 0)
                close (fs->chan_fd);
        fs->chan_fd = -1;
        fs->connected = false;
        proto_decoder_clear (&fs->dec);
}

void
fs_transport_lost (Fs *fs, const char *why)
{
        fs_session_end (fs, why);
        if (fs->transport == FS_TRANSPORT_SERIAL) {
                /* The port reports POLLHUP until the host reopens it: the loop looks again
                 * after a pause, and the host's new HELLO starts a new session. */
                if (!fs->hup_backoff)
                        fs_debug ("host side gone (%s); waiting for a new HELLO", why);
                fs->hup_backoff = true;
                fs->hup_until_ms = fs_now_ms () + FS_HUP_BACKOFF_MS;
                fs_outq_clear (fs);
                proto_decoder_reset (&fs->dec);
                proto_decoder_skip_to_hello (&fs->dec);
                return;
        }
        fs_debug ("connection ended (%s)", why);
        fs_outq_clear (fs);
        if (fs->chan_fd >= 0)
                close (fs->chan_fd);
        fs->chan_fd = -1;
        fs->connected = false;
        fs->quit = true;
}

static void
framing_error (Fs *fs, int r)
{
        /* A virtio port cannot be closed, so every transport recovers the same way: the session
         * ends and everything up to the next HELLO header is dropped. */
        fs_log ("framing error (%s), waiting for a new HELLO", strerror (-r));
        fs_session_end (fs, "framing error");
}

static void
process_input (Fs *fs)
{
        while (fs->connected && !fs->quit) {
                ProtoFrame f;
                int r;

                r = proto_decoder_next_resync (&fs->dec, &f);
                if (r == 0)
                        break;
                if (r < 0) {
                        framing_error (fs, r);
                        continue;
                }
                fs_session_handle_frame (fs, &f);
        }
}

void
fs_transport_read (Fs *fs)
{
        /* A bounded number of reads per wake-up so that FUSE requests are not starved. */
        for (int i = 0; i < 16 && fs->connected && !fs->quit; i++) {
                size_t room;
                uint8_t *p = proto_decoder_space (&fs->dec, &room);
                ssize_t n;

                if (room == 0) {
                        process_input (fs);
                        continue;
                }
                n = read (fs->chan_fd, p, room);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno != EAGAIN)
                                fs_transport_lost (fs, strerror (errno));
                        return;
                }
                if (n == 0) {
                        fs_transport_lost (fs, "end of stream");
                        return;
                }
                fs->hup_backoff = false;
                proto_decoder_commit (&fs->dec, (size_t) n);
                process_input (fs);
        }
}

void
fs_outq_push (Fs *fs, uint8_t *buf, size_t len)
{
        if (corral_outq_push (&fs->out, buf, len) < 0)
                fs_log ("out of memory, frame dropped");
}

void
fs_outq_clear (Fs *fs)
{
        corral_outq_clear (&fs->out);
}

void
fs_outq_drop (Fs *fs)
{
        /* The host may have half of a frame: the rest must follow or the stream is corrupt. */
        corral_outq_drop_pending (&fs->out);
}

void
fs_transport_flush (Fs *fs)
{
        int r;

        if (!fs->connected || fs->hup_backoff || corral_outq_empty (&fs->out))
                return;
        if ((r = corral_outq_write (&fs->out, fs->chan_fd)) < 0)
                fs_transport_lost (fs, strerror (-r));
}
