/* test-proto.c — frame codec, bounded decoder, resync and control-message validation.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <errno.h>
#include <glib.h>
#include <string.h>

#include "proto.h"

static void
put_header (uint8_t *p, uint8_t type, uint8_t flags, uint32_t channel, uint32_t length)
{
        proto_header_encode (p, type, flags, channel, length);
}

static void
test_header_roundtrip (void)
{
        uint8_t h[PROTO_HEADER_SIZE];
        ProtoFrame f;

        put_header (h, PROTO_FRAME_DATA, PROTO_STREAM_STDERR | PROTO_DATA_EOF, 77, 5);
        g_assert_cmpint (proto_header_decode (h, PROTO_MAX_PAYLOAD, &f), ==, 0);
        g_assert_cmpuint (f.type, ==, PROTO_FRAME_DATA);
        g_assert_cmpuint (f.flags, ==, PROTO_STREAM_STDERR | PROTO_DATA_EOF);
        g_assert_cmpuint (f.channel, ==, 77);
        g_assert_cmpuint (f.length, ==, 5);
        /* Big-endian on the wire. */
        g_assert_cmpuint (h[7], ==, 77);
        g_assert_cmpuint (h[11], ==, 5);
}

/* SECURITY-TESTS 23: lengths 0, max, max+1, 0xFFFFFFFF. */
static void
test_header_lengths (void)
{
        static const struct {
                uint8_t type;
                uint32_t length;
                int expect;
        } cases[] = {
                { PROTO_FRAME_DATA, 0, 0 },
                { PROTO_FRAME_DATA, PROTO_MAX_PAYLOAD, 0 },
                { PROTO_FRAME_DATA, PROTO_MAX_PAYLOAD + 1, -EMSGSIZE },
                { PROTO_FRAME_DATA, 0xFFFFFFFFu, -EMSGSIZE },
                { PROTO_FRAME_REQUEST, 0, -EBADMSG }, /* JSON frames are never empty */
                { PROTO_FRAME_REQUEST, PROTO_MAX_PAYLOAD, 0 },
                { PROTO_FRAME_REQUEST, 0xFFFFFFFFu, -EMSGSIZE },
                { PROTO_FRAME_CREDIT, 3, -EBADMSG },
                { PROTO_FRAME_PING, 9, -EBADMSG },
                { PROTO_FRAME_CLOSE, 1, -EBADMSG },
        };

        for (size_t i = 0; i < G_N_ELEMENTS (cases); i++) {
                uint8_t h[PROTO_HEADER_SIZE];
                uint32_t channel = cases[i].type == PROTO_FRAME_REQUEST ? 0 : 1;
                ProtoFrame f;

                put_header (h, cases[i].type, 0, channel, cases[i].length);
                g_assert_cmpint (proto_header_decode (h, PROTO_MAX_PAYLOAD, &f), ==,
                                 cases[i].expect);
        }
}

static void
test_header_rules (void)
{
        uint8_t h[PROTO_HEADER_SIZE];
        ProtoFrame f;

        put_header (h, PROTO_FRAME_DATA, 0, 0, 1); /* DATA needs a channel */
        g_assert_cmpint (proto_header_decode (h, PROTO_MAX_PAYLOAD, &f), ==, -EBADMSG);
        put_header (h, PROTO_FRAME_REQUEST, 0, 3, 2); /* control frames are channel 0 */
        g_assert_cmpint (proto_header_decode (h, PROTO_MAX_PAYLOAD, &f), ==, -EBADMSG);
        put_header (h, PROTO_FRAME_DATA, 3, 1, 1); /* stream 3 is reserved */
        g_assert_cmpint (proto_header_decode (h, PROTO_MAX_PAYLOAD, &f), ==, -EBADMSG);
        put_header (h, PROTO_FRAME_DATA, 0x10, 1, 1); /* unknown flag bit */
        g_assert_cmpint (proto_header_decode (h, PROTO_MAX_PAYLOAD, &f), ==, -EBADMSG);
        put_header (h, PROTO_FRAME_DATA, 0, 0x80000000u, 1); /* channel above 2^31-1 */
        g_assert_cmpint (proto_header_decode (h, PROTO_MAX_PAYLOAD, &f), ==, -EBADMSG);
        put_header (h, 0, 0, 0, 1);
        g_assert_cmpint (proto_header_decode (h, PROTO_MAX_PAYLOAD, &f), ==, -EBADMSG);
        put_header (h, PROTO_FRAME_TYPE_MAX + 1, 0, 0, 1);
        g_assert_cmpint (proto_header_decode (h, PROTO_MAX_PAYLOAD, &f), ==, -EBADMSG);
        put_header (h, PROTO_FRAME_HELLO, 0, 0, 2);
        h[0] = 'G';
        g_assert_cmpint (proto_header_decode (h, PROTO_MAX_PAYLOAD, &f), ==, -EBADMSG);
}

static GByteArray *
frames_stream (void)
{
        GByteArray *s = g_byte_array_new ();
        const char *json = "{\"id\":1,\"method\":\"info\",\"params\":{}}";
        uint8_t *buf;
        size_t len;

        g_assert_cmpint (
                proto_frame_build (PROTO_FRAME_REQUEST, 0, 0, json, strlen (json), &buf, &len), ==,
                0);
        g_byte_array_append (s, buf, (guint) len);
        free (buf);
        g_assert_cmpint (
                proto_frame_build (PROTO_FRAME_DATA, PROTO_DATA_EOF | 1, 9, "", 0, &buf, &len), ==,
                0);
        g_byte_array_append (s, buf, (guint) len);
        free (buf);
        g_assert_cmpint (proto_frame_build (PROTO_FRAME_PING, 0, 0, "12345678", 8, &buf, &len), ==,
                         0);
        g_byte_array_append (s, buf, (guint) len);
        free (buf);
        return s;
}

static void
check_stream_frames (ProtoDecoder *dec, guint *n_seen)
{
        ProtoFrame f;
        int r;

        while ((r = proto_decoder_next (dec, &f)) == 1) {
                switch ((*n_seen)++) {
                case 0:
                        g_assert_cmpuint (f.type, ==, PROTO_FRAME_REQUEST);
                        g_assert_cmpmem (f.payload, 7, "{\"id\":1", 7);
                        break;
                case 1:
                        g_assert_cmpuint (f.type, ==, PROTO_FRAME_DATA);
                        g_assert_cmpuint (f.length, ==, 0);
                        g_assert_cmpuint (f.flags, ==, PROTO_DATA_EOF | 1);
                        break;
                case 2:
                        g_assert_cmpuint (f.type, ==, PROTO_FRAME_PING);
                        g_assert_cmpmem (f.payload, 8, "12345678", 8);
                        break;
                default:
                        g_assert_not_reached ();
                }
        }
        g_assert_cmpint (r, ==, 0);
}

/* Every split of the stream into two feeds, and byte-at-a-time, decodes the same frames. */
static void
test_decoder_splits (void)
{
        g_autoptr (GByteArray) s = frames_stream ();
        ProtoDecoder dec;

        g_assert_cmpint (proto_decoder_init (&dec, 0), ==, 0);
        for (guint cut = 0; cut <= s->len; cut++) {
                guint seen = 0;

                proto_decoder_reset (&dec);
                g_assert_cmpuint (proto_decoder_feed (&dec, s->data, cut), ==, cut);
                check_stream_frames (&dec, &seen);
                g_assert_cmpuint (proto_decoder_feed (&dec, s->data + cut, s->len - cut), ==,
                                  s->len - cut);
                check_stream_frames (&dec, &seen);
                g_assert_cmpuint (seen, ==, 3);
        }
        proto_decoder_reset (&dec);
        {
                guint seen = 0;

                for (guint i = 0; i < s->len; i++) {
                        g_assert_cmpuint (proto_decoder_feed (&dec, s->data + i, 1), ==, 1);
                        check_stream_frames (&dec, &seen);
                }
                g_assert_cmpuint (seen, ==, 3);
        }
        proto_decoder_clear (&dec);
}

/* Max-size frames back to back through the fixed buffer: compaction keeps them whole. */
static void
test_decoder_max_frames (void)
{
        ProtoDecoder dec;
        g_autofree uint8_t *payload = g_malloc (PROTO_MAX_PAYLOAD);
        uint8_t hdr[PROTO_HEADER_SIZE];
        guint frames = 0;

        for (size_t i = 0; i < PROTO_MAX_PAYLOAD; i++)
                payload[i] = (uint8_t) (i * 7);
        g_assert_cmpint (proto_decoder_init (&dec, 0), ==, 0);
        put_header (hdr, PROTO_FRAME_DATA, 1, 1, PROTO_MAX_PAYLOAD);

        for (int round = 0; round < 3; round++) {
                size_t off = 0;
                ProtoFrame f;

                /* Start mid-buffer so the frame wraps past the end once. */
                g_assert_cmpuint (proto_decoder_feed (&dec, hdr, sizeof hdr), ==, sizeof hdr);
                while (off < PROTO_MAX_PAYLOAD) {
                        size_t n = MIN (PROTO_MAX_PAYLOAD - off, 100000);

                        g_assert_cmpuint (proto_decoder_feed (&dec, payload + off, n), ==, n);
                        off += n;
                }
                g_assert_cmpint (proto_decoder_next (&dec, &f), ==, 1);
                g_assert_cmpuint (f.length, ==, PROTO_MAX_PAYLOAD);
                g_assert_true (memcmp (f.payload, payload, PROTO_MAX_PAYLOAD) == 0);
                frames++;
                /* A small frame in between shifts the next one's start. */
                g_assert_cmpuint (proto_decoder_feed (&dec, hdr, 4), ==, 4);
                g_assert_cmpint (proto_decoder_next (&dec, &f), ==, 0);
                proto_decoder_reset (&dec);
        }
        g_assert_cmpuint (frames, ==, 3);
        proto_decoder_clear (&dec);
}

/* A hostile length must not be waited for or stored: the decoder says so at the header. */
static void
test_decoder_refuses_oversize (void)
{
        ProtoDecoder dec;
        uint8_t hdr[PROTO_HEADER_SIZE];
        ProtoFrame f;
        size_t room;

        g_assert_cmpint (proto_decoder_init (&dec, 4096), ==, 0);
        g_assert_cmpuint (dec.cap, ==, PROTO_HEADER_SIZE + 4096);
        put_header (hdr, PROTO_FRAME_DATA, 1, 1, 4097);
        proto_decoder_feed (&dec, hdr, sizeof hdr);
        g_assert_cmpint (proto_decoder_next (&dec, &f), ==, -EMSGSIZE);
        /* Stays broken until resync. */
        g_assert_cmpint (proto_decoder_next (&dec, &f), ==, -EBADMSG);
        g_assert_nonnull (proto_decoder_space (&dec, &room));
        g_assert_cmpuint (dec.cap, ==, PROTO_HEADER_SIZE + 4096);
        proto_decoder_clear (&dec);
}

static void
test_decoder_resync (void)
{
        ProtoDecoder dec;
        const char *hello = "{\"version\":1}";
        uint8_t *buf;
        size_t len;
        ProtoFrame f;
        g_autoptr (GByteArray) junk = g_byte_array_new ();

        g_assert_cmpint (proto_decoder_init (&dec, 0), ==, 0);
        /* Garbage that contains a magic but not a valid HELLO header, then a HELLO. */
        g_byte_array_append (junk, (const guint8 *) "garbage\xC0\x7A\x02\x00zz", 13);
        g_assert_cmpint (
                proto_frame_build (PROTO_FRAME_HELLO, 0, 0, hello, strlen (hello), &buf, &len), ==,
                0);
        g_byte_array_append (junk, buf, (guint) len);
        free (buf);

        proto_decoder_feed (&dec, junk->data, 12);
        g_assert_cmpint (proto_decoder_next (&dec, &f), <, 0);
        g_assert_cmpint (proto_decoder_resync (&dec), ==, 0);
        proto_decoder_feed (&dec, junk->data + 12, junk->len - 12);
        g_assert_cmpint (proto_decoder_resync (&dec), ==, 1);
        g_assert_cmpint (proto_decoder_next (&dec, &f), ==, 1);
        g_assert_cmpuint (f.type, ==, PROTO_FRAME_HELLO);
        g_assert_cmpmem (f.payload, f.length, hello, strlen (hello));
        proto_decoder_clear (&dec);
}

/* The guest programs' read loop: a framing error once, then nothing until a HELLO header. */
static void
test_decoder_next_resync (void)
{
        ProtoDecoder dec;
        const char *hello = "{\"version\":1}";
        uint8_t *buf;
        size_t len;
        ProtoFrame f;

        g_assert_cmpint (proto_decoder_init (&dec, 0), ==, 0);
        proto_decoder_feed (&dec, "garbage-garbage!", 16);
        g_assert_cmpint (proto_decoder_next_resync (&dec, &f), <, 0);
        g_assert_cmpint (proto_decoder_next_resync (&dec, &f), ==, 0);
        g_assert_cmpint (
                proto_frame_build (PROTO_FRAME_HELLO, 0, 0, hello, strlen (hello), &buf, &len), ==,
                0);
        proto_decoder_feed (&dec, buf, len);
        g_assert_cmpint (proto_decoder_next_resync (&dec, &f), ==, 1);
        g_assert_cmpuint (f.type, ==, PROTO_FRAME_HELLO);
        /* A stream taken up again: the next frame counts only from a HELLO on. */
        proto_decoder_reset (&dec);
        proto_decoder_skip_to_hello (&dec);
        proto_decoder_feed (&dec, "zz", 2);
        proto_decoder_feed (&dec, buf, len);
        g_assert_cmpint (proto_decoder_next_resync (&dec, &f), ==, 1);
        g_assert_cmpuint (f.type, ==, PROTO_FRAME_HELLO);
        free (buf);
        proto_decoder_clear (&dec);
}

/* HELLO as every guest program reads it (SECURITY.md A1, P5). */
static void
test_hello_parse (void)
{
        static const struct {
                const char *json;
                int want;
        } cases[] = {
                { "{\"role\":\"host\",\"nonce\":\"0123456789abcdef0123456789abcdef\",\"version\":"
                  "1}",
                  0 },
                { "{\"role\":\"host\",\"nonce\":\"0123456789abcdef0123456789abcdef\",\"version\":2,"
                  "\"min_version\":2}",
                  0 },
                { "{\"role\":\"agent\",\"nonce\":\"0123456789abcdef0123456789abcdef\",\"version\":"
                  "1}",
                  -EINVAL },
                { "{\"role\":\"host\",\"nonce\":\"0123456789ABCDEF0123456789abcdef\",\"version\":"
                  "1}",
                  -EINVAL },
                { "{\"role\":\"host\",\"nonce\":\"0123456789abcdef\",\"version\":1}", -EINVAL },
                { "{\"role\":\"host\",\"nonce\":\"0123456789abcdef0123456789abcdef\",\"version\":"
                  "0}",
                  -EINVAL },
                { "{\"role\":\"host\",\"nonce\":\"0123456789abcdef0123456789abcdef\"}", -EINVAL },
                { "{\"role\":\"host\",\"nonce\":\"0123456789abcdef0123456789abcdef\",\"version\":1,"
                  "\"min_version\":\"1\"}",
                  -EINVAL },
                { "[1]", -EINVAL },
        };

        for (gsize i = 0; i < G_N_ELEMENTS (cases); i++) {
                ProtoFrame f = { .type = PROTO_FRAME_HELLO,
                                 .payload = (const uint8_t *) cases[i].json,
                                 .length = (uint32_t) strlen (cases[i].json) };
                ProtoHello h;

                g_test_message ("%s", cases[i].json);
                g_assert_cmpint (proto_hello_parse (&f, "host", &h), ==, cases[i].want);
                if (cases[i].want == 0) {
                        g_assert_cmpstr (h.nonce, ==, "0123456789abcdef0123456789abcdef");
                        g_assert_cmpint (h.min_version, ==, i == 0 ? 1 : 2);
                } else {
                        g_assert_null (h.json);
                }
                proto_hello_clear (&h);
        }
}

static void
test_frame_build_refusals (void)
{
        uint8_t *buf = NULL;
        size_t len = 0;

        g_assert_cmpint (
                proto_frame_build (PROTO_FRAME_DATA, 0, 1, "", PROTO_MAX_PAYLOAD + 1, &buf, &len),
                ==, -EMSGSIZE);
        g_assert_cmpint (proto_frame_build (PROTO_FRAME_DATA, 0, 0, "x", 1, &buf, &len), ==,
                         -EINVAL);
        g_assert_cmpint (proto_frame_build (PROTO_FRAME_REQUEST, 0, 0, "", 0, &buf, &len), ==,
                         -EINVAL);
        g_assert_null (buf);
}

static void
test_utf8 (void)
{
        static const struct {
                const char *s;
                gboolean valid;
        } cases[] = {
                { "plain", TRUE },
                { "gr\xc3\xbc\xc3\x9f", TRUE },
                { "\xe2\x82\xac", TRUE },
                { "\xf0\x9f\x90\x84", TRUE },
                { "\xc3", FALSE },
                { "\xc0\xaf", FALSE }, /* overlong '/' */
                { "\xe0\x80\xaf", FALSE },
                { "\xed\xa0\x80", FALSE }, /* surrogate */
                { "\xf4\x90\x80\x80", FALSE },
                { "\xff", FALSE },
                { "\x80", FALSE },
                { "a\xe2\x82", FALSE },
        };

        for (size_t i = 0; i < G_N_ELEMENTS (cases); i++)
                g_assert_cmpint (
                        proto_utf8_valid ((const uint8_t *) cases[i].s, strlen (cases[i].s)), ==,
                        cases[i].valid);
}

static int
parse_str (const char *s, cJSON **ret)
{
        return proto_json_parse ((const uint8_t *) s, strlen (s), ret);
}

/* SECURITY-TESTS 24: garbage, truncation, bad UTF-8, deep nesting, wrong shapes. */
static void
test_json_refusals (void)
{
        static const char *const bad[] = {
                "",
                "garbage",
                "{\"id\":1",
                "[1,2]",
                "\"str\"",
                "{\"a\":\"\xc3\x28\"}",
                "{} trailing",
                "{}{}",
                "{\"path\":\"/etc/passwd\\u0000.txt\"}",
        };
        g_autoptr (GString) deep = g_string_new ("{\"a\":");
        cJSON *obj = NULL;

        for (size_t i = 0; i < G_N_ELEMENTS (bad); i++)
                g_assert_cmpint (parse_str (bad[i], &obj), ==, -EINVAL);
        g_assert_cmpint (proto_json_parse ((const uint8_t *) "{\"a\":\"\0\"}", 9, &obj), ==,
                         -EINVAL);

        for (int i = 0; i < PROTO_MAX_JSON_DEPTH; i++)
                g_string_append (deep, "[");
        for (int i = 0; i < PROTO_MAX_JSON_DEPTH; i++)
                g_string_append (deep, "]");
        g_string_append (deep, "}");
        g_assert_cmpint (parse_str (deep->str, &obj), ==, -EINVAL);
        g_assert_null (obj);

        /* Brackets inside strings do not count. */
        g_assert_cmpint (
                parse_str ("{\"a\":\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\\\"[[\"}", &obj), ==,
                0);
        cJSON_Delete (obj);
        /* An escaped backslash before "u0000" is not a NUL escape. */
        g_assert_cmpint (parse_str ("{\"a\":\"\\\\u0000\"}", &obj), ==, 0);
        cJSON_Delete (obj);
        g_assert_cmpint (parse_str (" {\"id\": 3} \n", &obj), ==, 0);
        cJSON_Delete (obj);
}

static void
test_json_accessors (void)
{
        cJSON *obj = NULL;
        const char *s = NULL;
        int64_t v = 0;
        bool b = false;
        uint64_t id = 0;

        g_assert_cmpint (parse_str ("{\"s\":\"hi\",\"n\":42,\"f\":1.5,\"big\":1e300,\"b\":true,"
                                    "\"neg\":-1,\"id\":9007199254740992,\"nul\":null}",
                                    &obj),
                         ==, 0);
        g_assert_cmpint (proto_json_get_string (obj, "s", 16, &s), ==, 0);
        g_assert_cmpstr (s, ==, "hi");
        g_assert_cmpint (proto_json_get_string (obj, "s", 1, &s), ==, -EINVAL);
        g_assert_cmpint (proto_json_get_string (obj, "n", 16, &s), ==, -EINVAL);
        g_assert_cmpint (proto_json_get_string (obj, "missing", 16, &s), ==, -ENOENT);
        g_assert_cmpint (proto_json_get_string (obj, "nul", 16, &s), ==, -ENOENT);
        g_assert_cmpint (proto_json_get_int (obj, "n", 0, 100, &v), ==, 0);
        g_assert_cmpint (v, ==, 42);
        g_assert_cmpint (proto_json_get_int (obj, "n", 0, 41, &v), ==, -EINVAL);
        g_assert_cmpint (proto_json_get_int (obj, "f", 0, 100, &v), ==, -EINVAL);
        g_assert_cmpint (proto_json_get_int (obj, "big", 0, INT64_MAX, &v), ==, -EINVAL);
        g_assert_cmpint (proto_json_get_int (obj, "neg", 0, 100, &v), ==, -EINVAL);
        g_assert_cmpint (proto_json_get_int (obj, "s", 0, 100, &v), ==, -EINVAL);
        g_assert_cmpint (proto_json_get_bool (obj, "b", &b), ==, 0);
        g_assert_true (b);
        g_assert_cmpint (proto_json_get_bool (obj, "n", &b), ==, -EINVAL);
        /* 2^53 is past the id range: ids are exact integers in a double. */
        g_assert_cmpint (proto_json_get_id (obj, &id), ==, -EINVAL);
        cJSON_Delete (obj);
}

static void
test_builders (void)
{
        cJSON *msg = proto_error_response_new (7, "not-found", "no such file", ENOENT);
        uint8_t *buf;
        size_t len;
        ProtoFrame f;
        cJSON *back = NULL;
        uint64_t id = 0;

        g_assert_nonnull (msg);
        g_assert_cmpint (proto_frame_build_json (PROTO_FRAME_RESPONSE, msg, &buf, &len), ==, 0);
        g_assert_cmpint (proto_header_decode (buf, PROTO_MAX_PAYLOAD, &f), ==, 0);
        g_assert_cmpuint (f.type, ==, PROTO_FRAME_RESPONSE);
        g_assert_cmpint (proto_json_parse (buf + PROTO_HEADER_SIZE, f.length, &back), ==, 0);
        g_assert_cmpint (proto_json_get_id (back, &id), ==, 0);
        g_assert_cmpuint (id, ==, 7);
        g_assert_cmpstr (
                cJSON_GetObjectItem (cJSON_GetObjectItem (back, "error"), "errno")->valuestring, ==,
                "ENOENT");
        free (buf);
        cJSON_Delete (back);
        cJSON_Delete (msg);

        g_assert_cmpstr (proto_errno_code (ENOENT), ==, "not-found");
        g_assert_cmpstr (proto_errno_code (EROFS), ==, "permission-denied");
        g_assert_cmpstr (proto_errno_code (EIO), ==, "io");
        g_assert_null (proto_errno_name (-1));
}

static void
test_random_hex (void)
{
        char a[PROTO_NONCE_HEX_LEN + 1], b[PROTO_NONCE_HEX_LEN + 1];

        g_assert_cmpint (proto_random_hex (a, PROTO_NONCE_HEX_LEN / 2), ==, 0);
        g_assert_cmpint (proto_random_hex (b, PROTO_NONCE_HEX_LEN / 2), ==, 0);
        g_assert_cmpuint (strlen (a), ==, PROTO_NONCE_HEX_LEN);
        g_assert_cmpstr (a, !=, b);
        g_assert_cmpuint (strspn (a, "0123456789abcdef"), ==, PROTO_NONCE_HEX_LEN);
}

int
main (int argc, char **argv)
{
        g_test_init (&argc, &argv, NULL);
        g_test_add_func ("/proto/header/roundtrip", test_header_roundtrip);
        g_test_add_func ("/proto/header/lengths", test_header_lengths);
        g_test_add_func ("/proto/header/rules", test_header_rules);
        g_test_add_func ("/proto/decoder/splits", test_decoder_splits);
        g_test_add_func ("/proto/decoder/max-frames", test_decoder_max_frames);
        g_test_add_func ("/proto/decoder/refuses-oversize", test_decoder_refuses_oversize);
        g_test_add_func ("/proto/decoder/resync", test_decoder_resync);
        g_test_add_func ("/proto/decoder/next-resync", test_decoder_next_resync);
        g_test_add_func ("/proto/hello/parse", test_hello_parse);
        g_test_add_func ("/proto/frame/build-refusals", test_frame_build_refusals);
        g_test_add_func ("/proto/json/utf8", test_utf8);
        g_test_add_func ("/proto/json/refusals", test_json_refusals);
        g_test_add_func ("/proto/json/accessors", test_json_accessors);
        g_test_add_func ("/proto/json/builders", test_builders);
        g_test_add_func ("/proto/random-hex", test_random_hex);
        return g_test_run ();
}
