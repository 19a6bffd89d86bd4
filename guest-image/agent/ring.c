/* ring.c — per-process output ring buffer of stream-tagged records.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "proc.h"

#include <stdlib.h>
#include <string.h>

#define REC_HDR 4u

void
ring_init (Ring *r, size_t cap)
{
        memset (r, 0, sizeof *r);
        r->cap = cap;
}

void
ring_clear (Ring *r)
{
        free (r->buf);
        r->buf = NULL;
        r->head = r->tail = 0;
}

static void
put (Ring *r, uint64_t off, const uint8_t *data, size_t n)
{
        size_t pos = (size_t) (off % r->cap);
        size_t first = r->cap - pos < n ? r->cap - pos : n;

        memcpy (r->buf + pos, data, first);
        memcpy (r->buf, data + first, n - first);
}

static uint32_t
header_at (const Ring *r, uint64_t off)
{
        uint8_t h[REC_HDR];

        for (unsigned i = 0; i < REC_HDR; i++)
                h[i] = r->buf[(off + i) % r->cap];
        return proto_get_u32 (h);
}

void
ring_append (Ring *r, unsigned stream, const uint8_t *data, size_t n)
{
        uint8_t h[REC_HDR];

        if (n == 0 || r->cap <= REC_HDR)
                return;
        if (!r->buf) {
                r->buf = malloc (r->cap);
                if (!r->buf)
                        return;
        }
        /* A chunk larger than the ring keeps its newest bytes. */
        if (n > r->cap - REC_HDR) {
                data += n - (r->cap - REC_HDR);
                n = r->cap - REC_HDR;
        }
        while (r->tail - r->head + REC_HDR + n > r->cap)
                r->head += REC_HDR + (header_at (r, r->head) & 0x3FFFFFFFu);
        proto_put_u32 (h, ((uint32_t) stream << 30) | (uint32_t) n);
        put (r, r->tail, h, REC_HDR);
        put (r, r->tail + REC_HDR, data, n);
        r->tail += REC_HDR + n;
}

bool
ring_peek (const Ring *r,
           RingCursor *cur,
           unsigned *ret_stream,
           const uint8_t **ret_data,
           size_t *ret_len)
{
        for (;;) {
                uint32_t h;
                size_t len, pos;

                if (cur->rec < r->head) {
                        cur->rec = r->head;
                        cur->done = 0;
                }
                if (cur->rec >= r->tail)
                        return false;
                h = header_at (r, cur->rec);
                len = h & 0x3FFFFFFFu;
                if (cur->done >= len) {
                        cur->rec += REC_HDR + len;
                        cur->done = 0;
                        continue;
                }
                pos = (size_t) ((cur->rec + REC_HDR + cur->done) % r->cap);
                *ret_stream = h >> 30;
                *ret_data = r->buf + pos;
                *ret_len = len - cur->done;
                if (*ret_len > r->cap - pos)
                        *ret_len = r->cap - pos;
                return true;
        }
}

void
ring_advance (RingCursor *cur, size_t n)
{
        cur->done += n;
}

void
ring_cursor_head (const Ring *r, RingCursor *cur)
{
        cur->rec = r->head;
        cur->done = 0;
}

void
ring_cursor_tail (const Ring *r, RingCursor *cur)
{
        cur->rec = r->tail;
        cur->done = 0;
}
