/* corral-outq.c — the guest programs' frame queue (corral-outq.h).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-outq.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/uio.h>

#define WRITEV_FRAMES 16

struct CorralOutFrame {
        CorralOutFrame *next;
        uint8_t *buf;
        size_t len;
};

int
corral_outq_push (CorralOutq *q, uint8_t *buf, size_t len)
{
        CorralOutFrame *f = malloc (sizeof *f);

        if (!f) {
                free (buf);
                return -ENOMEM;
        }
        f->next = NULL;
        f->buf = buf;
        f->len = len;
        if (q->tail)
                q->tail->next = f;
        else
                q->head = f;
        q->tail = f;
        q->bytes += len;
        return 0;
}

static void
frame_free (CorralOutq *q, CorralOutFrame *f)
{
        q->bytes -= f->len;
        free (f->buf);
        free (f);
}

static void
pop (CorralOutq *q)
{
        CorralOutFrame *f = q->head;

        q->head = f->next;
        if (!q->head)
                q->tail = NULL;
        q->head_off = 0;
        frame_free (q, f);
}

int
corral_outq_write (CorralOutq *q, int fd)
{
        while (q->head) {
                struct iovec iov[WRITEV_FRAMES];
                int n = 0;
                ssize_t w;

                for (CorralOutFrame *f = q->head; f && n < WRITEV_FRAMES; f = f->next, n++) {
                        size_t off = n == 0 ? q->head_off : 0;

                        iov[n].iov_base = f->buf + off;
                        iov[n].iov_len = f->len - off;
                }
                w = writev (fd, iov, n);
                if (w < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                return 0;
                        return -errno;
                }
                while (w > 0 && q->head) {
                        size_t left = q->head->len - q->head_off;

                        if ((size_t) w < left) {
                                q->head_off += (size_t) w;
                                break;
                        }
                        w -= (ssize_t) left;
                        pop (q);
                }
        }
        return 0;
}

void
corral_outq_drop_pending (CorralOutq *q)
{
        CorralOutFrame *keep = q->head_off > 0 ? q->head : NULL;

        if (!keep) {
                corral_outq_clear (q);
                return;
        }
        while (keep->next) {
                CorralOutFrame *f = keep->next;

                keep->next = f->next;
                frame_free (q, f);
        }
        q->tail = keep;
}

void
corral_outq_clear (CorralOutq *q)
{
        while (q->head)
                pop (q);
        q->head_off = 0;
}
