/* channel.c — the session's channels (exec attachments and file transfers) and their credit.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "agent.h"

#include <errno.h>
#include <stdlib.h>

#define CHAN_BUCKETS 1024u

static unsigned
bucket (uint32_t id)
{
        return (id * 2654435761u) % CHAN_BUCKETS;
}

void
channels_init (Agent *a)
{
        a->chan_table = calloc (CHAN_BUCKETS, sizeof *a->chan_table);
}

void
channels_clear (Agent *a)
{
        channels_drop_all (a);
        free (a->chan_table);
        a->chan_table = NULL;
}

Channel *
channel_lookup (Agent *a, uint32_t id)
{
        if (!a->chan_table)
                return NULL;
        for (Channel *c = a->chan_table[bucket (id)]; c; c = c->hnext)
                if (c->id == id)
                        return c;
        return NULL;
}

int
channel_new (Agent *a, uint32_t id, const ChannelOps *ops, void *owner, Channel **ret)
{
        Channel *c;
        unsigned b = bucket (id);

        if (!a->chan_table)
                return -ENOMEM;
        if (channel_lookup (a, id))
                return -EEXIST;
        if (a->n_channels >= AGENT_MAX_CHANNELS)
                return -EBUSY;
        c = calloc (1, sizeof *c);
        if (!c)
                return -ENOMEM;
        c->id = id;
        c->ops = ops;
        c->owner = owner;
        c->credit = a->window;
        c->in_credit = a->window;
        c->hnext = a->chan_table[b];
        a->chan_table[b] = c;
        c->next = a->channels;
        if (a->channels)
                a->channels->prev = c;
        a->channels = c;
        a->n_channels++;
        *ret = c;
        return 0;
}

void
channel_free (Agent *a, Channel *c)
{
        Channel **pp;

        if (!c)
                return;
        for (pp = &a->chan_table[bucket (c->id)]; *pp; pp = &(*pp)->hnext) {
                if (*pp == c) {
                        *pp = c->hnext;
                        break;
                }
        }
        if (c->prev)
                c->prev->next = c->next;
        else
                a->channels = c->next;
        if (c->next)
                c->next->prev = c->prev;
        a->n_channels--;
        free (c);
}

void
channel_abort (Agent *a, Channel *c, bool send_close)
{
        uint32_t id = c->id;

        c->ops->drop (a, c, !send_close);
        channel_free (a, c);
        if (send_close)
                agent_send_frame (a, PROTO_FRAME_CLOSE, 0, id, NULL, 0);
}

void
channel_grant (Agent *a, Channel *c, size_t n)
{
        uint8_t buf[4];

        while (n > 0) {
                uint32_t k = n > UINT32_MAX ? UINT32_MAX : (uint32_t) n;

                c->in_credit += k;
                proto_put_u32 (buf, k);
                agent_send_frame (a, PROTO_FRAME_CREDIT, 0, c->id, buf, sizeof buf);
                n -= k;
        }
}

void
channels_pump_all (Agent *a)
{
        Channel *c = a->channels;

        /* A pump may free its own channel (a finished transfer), never another one. */
        while (c && !a->out_full) {
                Channel *next = c->next;

                c->ops->pump (a, c);
                c = next;
        }
}

void
channels_drop_all (Agent *a)
{
        while (a->channels) {
                Channel *c = a->channels;

                c->ops->drop (a, c, false);
                channel_free (a, c);
        }
}

bool
channel_param (Agent *a, uint64_t id, const cJSON *params, uint32_t *ret)
{
        int64_t v;
        int r = proto_json_get_int (params, "channel", 1, PROTO_MAX_CHANNEL, &v);

        if (r < 0) {
                agent_respond_error (a, id, "invalid-request",
                                     r == -ENOENT ? "missing channel" : "invalid channel", 0);
                return false;
        }
        if (channel_lookup (a, (uint32_t) v)) {
                agent_respond_error (a, id, "invalid-request", "channel in use", 0);
                return false;
        }
        if (a->n_channels >= AGENT_MAX_CHANNELS) {
                agent_respond_error (a, id, "busy", "too many channels", 0);
                return false;
        }
        *ret = (uint32_t) v;
        return true;
}
