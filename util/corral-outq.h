/* corral-outq.h — the bounded queue of encoded frames a guest program sends to the host, one
 * implementation for corral-agent and corral-fs (plain C, no GLib).
 *
 * Frames go out whole and in order, many per writev, from a non-blocking descriptor; what the
 * descriptor does not take stays queued with the offset reached. The caller bounds the queue: it
 * looks at `bytes` before producing more (SECURITY.md A5). When a session ends, frames queued for
 * it are dropped, but a frame the host has partly received is finished first, or the stream
 * would lose its framing.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct CorralOutFrame CorralOutFrame;

typedef struct {
        CorralOutFrame *head, *tail;
        size_t bytes; /* queued, the head's written part included */
        size_t head_off; /* bytes of the head frame already written */
} CorralOutq;

/* Appends buf (malloc'd; the queue owns it). -ENOMEM: buf is freed and the frame lost. */
int corral_outq_push (CorralOutq *q, uint8_t *buf, size_t len);

/* Writes what fd takes now. 0 when everything went or fd would block; -errno when the
 * connection is broken. */
int corral_outq_write (CorralOutq *q, int fd);

/* Drops every frame but a partly written head (see above). */
void corral_outq_drop_pending (CorralOutq *q);

/* Drops everything (the connection is gone). */
void corral_outq_clear (CorralOutq *q);

static inline bool
corral_outq_empty (const CorralOutq *q)
{
        return q->head == NULL;
}
