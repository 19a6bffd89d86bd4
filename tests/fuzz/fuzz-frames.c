/* fuzz-frames.c — libFuzzer target for the frame decoder and the control-message parser.
 *
 * The first input byte picks a chunk size; the rest is the byte stream, fed to one decoder in
 * chunks of that size, so splits at many offsets are explored; each decoded control frame goes through proto_json_parse and the
 * typed accessors, exactly as the agent and the host client consume them. A framing error is
 * followed by resync, as on a virtio-serial port.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

static void
consume_control (const ProtoFrame *f)
{
        cJSON *obj = NULL;
        const cJSON *params = NULL;
        const char *s;
        uint64_t id;
        int64_t v;
        bool b;

        if (proto_json_parse (f->payload, f->length, &obj) < 0)
                return;
        (void) proto_json_get_id (obj, &id);
        (void) proto_json_get_string (obj, "method", 64, &s);
        (void) proto_json_get_string (obj, "nonce", PROTO_NONCE_HEX_LEN, &s);
        (void) proto_json_get_int (obj, "version", 0, 255, &v);
        if (proto_json_get_object (obj, "params", &params) == 0) {
                const cJSON *argv = NULL;

                (void) proto_json_get_string (params, "path", 4096, &s);
                (void) proto_json_get_int (params, "channel", 1, PROTO_MAX_CHANNEL, &v);
                (void) proto_json_get_bool (params, "stdin", &b);
                if (proto_json_get_array (params, "argv", 4096, &argv) == 0) {
                        const cJSON *item;

                        cJSON_ArrayForEach (item, argv)
                                (void) cJSON_IsString (item);
                }
        }
        cJSON_Delete (obj);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
        static ProtoDecoder dec;
        static bool ready;
        size_t off = 1, chunk;

        if (!ready) {
                /* A small max payload keeps the fuzzer's buffer tiny and reaches limits quickly. */
                if (proto_decoder_init (&dec, 4096) < 0)
                        abort ();
                ready = true;
        }
        proto_decoder_reset (&dec);
        if (size == 0)
                return 0;
        chunk = 1 + data[0] % 128;

        while (off < size) {
                size_t n = chunk < size - off ? chunk : size - off;
                ProtoFrame f;
                int r;

                off += proto_decoder_feed (&dec, data + off, n);
                while ((r = proto_decoder_next (&dec, &f)) == 1) {
                        if (f.type <= PROTO_FRAME_EVENT)
                                consume_control (&f);
                        else if (f.type == PROTO_FRAME_CREDIT)
                                (void) proto_get_u32 (f.payload);
                }
                if (r < 0)
                        (void) proto_decoder_resync (&dec);
        }
        return 0;
}
