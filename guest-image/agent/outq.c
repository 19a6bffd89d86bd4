/* outq.c — the bounded queue of frames to the host.
 *
 * Memory stays bounded because producers look at out_full before producing: process output and
 * file reads stop, the host's input stops being read (so no new requests produce responses) and
 * watch events stay in the kernel's queue. What can still be added while full is a bounded amount
 * (one exit event per process, one response per request already read).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "agent.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/uio.h>
#include <unistd.h>

static void
outq_push (Agent *a, uint8_t *buf, size_t len)
{
        if (corral_outq_push (&a->outq, buf, len) < 0) {
                /* Dropping one frame would corrupt nothing on the wire but lose a message. */
                agent_log ("out of memory, frame dropped");
                return;
        }
        if (a->outq.bytes >= AGENT_OUTQ_HIGH)
                a->out_full = true;
        /* No write here: the loop flushes everything queued in one iteration with one writev
         * before it waits again (transport_flush), and asks for EPOLLOUT only if the socket
         * did not take it all. */
}

int
agent_send_frame (
        Agent *a, uint8_t type, uint8_t flags, uint32_t channel, const void *payload, size_t len)
{
        uint8_t *buf;
        size_t n;
        int r;

        if (!a->in_session || !a->connected)
                return 0;
        r = proto_frame_build (type, flags, channel, payload, len, &buf, &n);
        if (r < 0) {
                agent_log ("cannot build %s frame: %s", proto_frame_type_name (type),
                           strerror (-r));
                return r;
        }
        outq_push (a, buf, n);
        return 0;
}

int
agent_send_json (Agent *a, uint8_t type, cJSON *obj)
{
        uint8_t *buf;
        size_t n;
        int r;

        if (!obj)
                return -ENOMEM;
        if ((!a->in_session && type != PROTO_FRAME_HELLO) || !a->connected) {
                cJSON_Delete (obj);
                return 0;
        }
        r = proto_frame_build_json (type, obj, &buf, &n);
        cJSON_Delete (obj);
        if (r < 0) {
                agent_log ("cannot build %s frame: %s", proto_frame_type_name (type),
                           strerror (-r));
                return r;
        }
        outq_push (a, buf, n);
        return 0;
}

int
agent_outq_flush (Agent *a)
{
        int fd = a->out_src.fd >= 0 ? a->out_src.fd : a->in_src.fd;
        int r;

        if (!a->connected || fd < 0 || corral_outq_empty (&a->outq))
                return 0;
        r = corral_outq_write (&a->outq, fd);
        if (r < 0)
                return r;
        if (a->out_full && a->outq.bytes <= AGENT_OUTQ_LOW) {
                a->out_full = false;
                agent_kick (a);
        }
        transport_update_interest (a);
        return 0;
}

void
agent_outq_drain (Agent *a, int timeout_ms)
{
        int fd = a->out_src.fd >= 0 ? a->out_src.fd : a->in_src.fd;
        uint64_t deadline = agent_now_ms () + (uint64_t) timeout_ms;

        while (a->connected && fd >= 0 && !corral_outq_empty (&a->outq)) {
                struct pollfd pfd = { .fd = fd, .events = POLLOUT };
                uint64_t now = agent_now_ms ();

                if (now >= deadline || poll (&pfd, 1, (int) (deadline - now)) <= 0 ||
                    (pfd.revents & (POLLERR | POLLHUP)) || corral_outq_write (&a->outq, fd) < 0)
                        break;
        }
}

/* A new session must not see the old one's frames; a partly written frame is finished so that
 * the stream stays framed. */
void
agent_outq_drop_pending (Agent *a)
{
        corral_outq_drop_pending (&a->outq);
        if (a->out_full && a->outq.bytes <= AGENT_OUTQ_LOW)
                a->out_full = false;
}

void
agent_outq_clear (Agent *a)
{
        corral_outq_clear (&a->outq);
        a->out_full = false;
}

void
agent_kick (Agent *a)
{
        transport_update_interest (a);
        channels_pump_all (a);
        procs_update_all (a);
        watches_kick (a);
        /* Frames that were left in the decoder while the queue was full. */
        transport_process_input (a);
}
