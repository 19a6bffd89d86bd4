/* proto.c — frame header codec and the incremental, bounded frame decoder.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "proto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void
proto_put_u32 (uint8_t *p, uint32_t v)
{
        p[0] = (uint8_t) (v >> 24);
        p[1] = (uint8_t) (v >> 16);
        p[2] = (uint8_t) (v >> 8);
        p[3] = (uint8_t) v;
}

uint32_t
proto_get_u32 (const uint8_t *p)
{
        return ((uint32_t) p[0] << 24) | ((uint32_t) p[1] << 16) | ((uint32_t) p[2] << 8) |
               (uint32_t) p[3];
}

void
proto_header_encode (uint8_t out[PROTO_HEADER_SIZE],
                     uint8_t type,
                     uint8_t flags,
                     uint32_t channel,
                     uint32_t length)
{
        out[0] = PROTO_MAGIC0;
        out[1] = PROTO_MAGIC1;
        out[2] = type;
        out[3] = flags;
        proto_put_u32 (out + 4, channel);
        proto_put_u32 (out + 8, length);
}

static bool
channel_frame (uint8_t type)
{
        /* FS_REQUEST / FS_REPLY carry the request id in the channel field. */
        return type == PROTO_FRAME_DATA || type == PROTO_FRAME_CREDIT ||
               type == PROTO_FRAME_CLOSE || type == PROTO_FRAME_FS_REQUEST ||
               type == PROTO_FRAME_FS_REPLY;
}

/* Per-type rules that can be checked from the header alone. */
static bool
header_consistent (uint8_t type, uint8_t flags, uint32_t channel, uint32_t length)
{
        if (type < PROTO_FRAME_HELLO || type > PROTO_FRAME_TYPE_MAX)
                return false;
        if (channel_frame (type) != (channel != 0) || channel > PROTO_MAX_CHANNEL)
                return false;

        switch (type) {
        case PROTO_FRAME_DATA:
                return (flags & ~(PROTO_DATA_STREAM_MASK | PROTO_DATA_EOF)) == 0 &&
                       (flags & PROTO_DATA_STREAM_MASK) != 3;
        case PROTO_FRAME_CREDIT:
                return flags == 0 && length == 4;
        case PROTO_FRAME_PING:
        case PROTO_FRAME_PONG:
                return flags == 0 && length == 8;
        case PROTO_FRAME_CLOSE:
                return flags == 0 && length == 0;
        case PROTO_FRAME_FS_REQUEST:
        case PROTO_FRAME_FS_REPLY:
        case PROTO_FRAME_FS_NOTIFY:
                /* Binary; every request, reply and notification has at least its 4-byte head. */
                return flags == 0 && length >= 4;
        default:
                /* JSON control frames: never empty. */
                return flags == 0 && length > 0;
        }
}

int
proto_header_decode (const uint8_t in[PROTO_HEADER_SIZE], uint32_t max_payload, ProtoFrame *ret)
{
        uint32_t channel, length;

        if (in[0] != PROTO_MAGIC0 || in[1] != PROTO_MAGIC1)
                return -EBADMSG;

        channel = proto_get_u32 (in + 4);
        length = proto_get_u32 (in + 8);
        if (length > max_payload)
                return -EMSGSIZE;
        if (!header_consistent (in[2], in[3], channel, length))
                return -EBADMSG;

        ret->type = in[2];
        ret->flags = in[3];
        ret->channel = channel;
        ret->length = length;
        ret->payload = NULL;
        return 0;
}

int
proto_decoder_init (ProtoDecoder *dec, uint32_t max_payload)
{
        if (max_payload == 0 || max_payload > PROTO_MAX_PAYLOAD)
                max_payload = PROTO_MAX_PAYLOAD;

        memset (dec, 0, sizeof *dec);
        dec->cap = PROTO_HEADER_SIZE + (size_t) max_payload;
        dec->buf = malloc (dec->cap);
        if (!dec->buf)
                return -ENOMEM;
        dec->max_payload = max_payload;
        return 0;
}

void
proto_decoder_clear (ProtoDecoder *dec)
{
        if (!dec)
                return;
        free (dec->buf);
        memset (dec, 0, sizeof *dec);
}

void
proto_decoder_reset (ProtoDecoder *dec)
{
        dec->start = 0;
        dec->len = 0;
        dec->broken = false;
}

/* Moves unconsumed bytes to the front so the tail has room for a whole frame. */
static void
compact (ProtoDecoder *dec)
{
        if (dec->start == 0)
                return;
        if (dec->len > 0)
                memmove (dec->buf, dec->buf + dec->start, dec->len);
        dec->start = 0;
}

uint8_t *
proto_decoder_space (ProtoDecoder *dec, size_t *ret_size)
{
        if (dec->start + dec->len == dec->cap)
                compact (dec);
        *ret_size = dec->cap - dec->start - dec->len;
        return dec->buf + dec->start + dec->len;
}

void
proto_decoder_commit (ProtoDecoder *dec, size_t n)
{
        /* Callers read at most the space they were given. */
        if (n > dec->cap - dec->start - dec->len)
                abort ();
        dec->len += n;
}

size_t
proto_decoder_feed (ProtoDecoder *dec, const void *data, size_t n)
{
        size_t room;
        uint8_t *dst = proto_decoder_space (dec, &room);

        if (n > room)
                n = room;
        memcpy (dst, data, n);
        dec->len += n;
        return n;
}

int
proto_decoder_next (ProtoDecoder *dec, ProtoFrame *ret)
{
        ProtoFrame f;
        int r;

        if (dec->broken)
                return -EBADMSG;
        if (dec->len < PROTO_HEADER_SIZE)
                return 0;

        r = proto_header_decode (dec->buf + dec->start, dec->max_payload, &f);
        if (r < 0) {
                dec->broken = true;
                return r;
        }
        if (dec->len - PROTO_HEADER_SIZE < f.length) {
                /* A whole frame always fits in cap; make sure it fits from start. */
                if (dec->start + PROTO_HEADER_SIZE + f.length > dec->cap)
                        compact (dec);
                return 0;
        }

        f.payload = dec->buf + dec->start + PROTO_HEADER_SIZE;
        dec->start += PROTO_HEADER_SIZE + f.length;
        dec->len -= PROTO_HEADER_SIZE + f.length;
        if (dec->len == 0)
                dec->start = 0;
        *ret = f;
        return 1;
}

int
proto_decoder_resync (ProtoDecoder *dec)
{
        while (dec->len >= PROTO_HEADER_SIZE) {
                const uint8_t *p = dec->buf + dec->start;
                ProtoFrame f;

                if (proto_header_decode (p, dec->max_payload, &f) == 0 &&
                    f.type == PROTO_FRAME_HELLO) {
                        dec->broken = false;
                        return 1;
                }
                dec->start++;
                dec->len--;
        }
        /* Keep a possible header prefix; the caller feeds more and calls again. */
        compact (dec);
        return 0;
}

int
proto_decoder_next_resync (ProtoDecoder *dec, ProtoFrame *ret)
{
        if (dec->broken && proto_decoder_resync (dec) == 0)
                return 0;
        return proto_decoder_next (dec, ret);
}

void
proto_decoder_skip_to_hello (ProtoDecoder *dec)
{
        dec->broken = true;
}

int
proto_frame_build (uint8_t type,
                   uint8_t flags,
                   uint32_t channel,
                   const void *payload,
                   size_t length,
                   uint8_t **ret_buf,
                   size_t *ret_len)
{
        uint8_t *buf;

        if (length > PROTO_MAX_PAYLOAD)
                return -EMSGSIZE;
        if (!header_consistent (type, flags, channel, (uint32_t) length))
                return -EINVAL;

        buf = malloc (PROTO_HEADER_SIZE + length);
        if (!buf)
                return -ENOMEM;
        proto_header_encode (buf, type, flags, channel, (uint32_t) length);
        if (length > 0)
                memcpy (buf + PROTO_HEADER_SIZE, payload, length);
        *ret_buf = buf;
        *ret_len = PROTO_HEADER_SIZE + length;
        return 0;
}

int
proto_frame_build_json (uint8_t type, const cJSON *obj, uint8_t **ret_buf, size_t *ret_len)
{
        char *text;
        int r;

        if (type < PROTO_FRAME_HELLO || type > PROTO_FRAME_EVENT)
                return -EINVAL;
        text = cJSON_PrintUnformatted (obj);
        if (!text)
                return -ENOMEM;
        r = proto_frame_build (type, 0, 0, text, strlen (text), ret_buf, ret_len);
        cJSON_free (text);
        return r;
}

const char *
proto_frame_type_name (uint8_t type)
{
        static const char *const names[] = {
                [PROTO_FRAME_HELLO] = "HELLO",       [PROTO_FRAME_REQUEST] = "REQUEST",
                [PROTO_FRAME_RESPONSE] = "RESPONSE", [PROTO_FRAME_EVENT] = "EVENT",
                [PROTO_FRAME_DATA] = "DATA",         [PROTO_FRAME_CREDIT] = "CREDIT",
                [PROTO_FRAME_PING] = "PING",         [PROTO_FRAME_PONG] = "PONG",
                [PROTO_FRAME_CLOSE] = "CLOSE",       [PROTO_FRAME_FS_REQUEST] = "FS_REQUEST",
                [PROTO_FRAME_FS_REPLY] = "FS_REPLY", [PROTO_FRAME_FS_NOTIFY] = "FS_NOTIFY",
        };

        if (type < PROTO_FRAME_HELLO || type > PROTO_FRAME_TYPE_MAX)
                return "UNKNOWN";
        return names[type];
}
