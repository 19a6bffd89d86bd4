/* proto.h — the host <-> guest wire contract (see PROTOCOL.md).
 *
 * Plain C, no GLib: linked by the guest agent and by the host. Functions that can fail return 0
 * (or a positive count) on success and a negative errno on failure; out-parameters are written
 * only on success.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#define PROTO_VERSION 1
#define PROTO_MIN_VERSION 1

#define PROTO_MAGIC0 0xC0
#define PROTO_MAGIC1 0x7A
#define PROTO_HEADER_SIZE 12
/* 1 MiB of data plus a page for the headers around it (a shared folder's 1 MiB write). */
#define PROTO_MAX_PAYLOAD (1024u * 1024u + 4096u)
#define PROTO_MAX_CHANNEL 0x7FFFFFFFu
#define PROTO_DEFAULT_WINDOW (1024u * 1024u)
#define PROTO_MAX_JSON_DEPTH 32
#define PROTO_NONCE_HEX_LEN 32
#define PROTO_MAX_ID 9007199254740991.0 /* 2^53 - 1 */

typedef enum {
        PROTO_FRAME_HELLO = 1,
        PROTO_FRAME_REQUEST = 2,
        PROTO_FRAME_RESPONSE = 3,
        PROTO_FRAME_EVENT = 4,
        PROTO_FRAME_DATA = 5,
        PROTO_FRAME_CREDIT = 6,
        PROTO_FRAME_PING = 7,
        PROTO_FRAME_PONG = 8,
        PROTO_FRAME_CLOSE = 9,
        /* File service (fs.h, FS-PROTOCOL.md): its own connection, never the agent's. */
        PROTO_FRAME_FS_REQUEST = 10,
        PROTO_FRAME_FS_REPLY = 11,
        PROTO_FRAME_FS_NOTIFY = 12,
} ProtoFrameType;

#define PROTO_FRAME_TYPE_MAX PROTO_FRAME_FS_NOTIFY

/* DATA flags */
#define PROTO_DATA_STREAM_MASK 0x03u
#define PROTO_DATA_EOF 0x80u

typedef enum {
        PROTO_STREAM_STDIN = 0,
        PROTO_STREAM_STDOUT = 1,
        PROTO_STREAM_STDERR = 2,
} ProtoStream;

typedef struct {
        uint8_t type;
        uint8_t flags;
        uint32_t channel;
        uint32_t length;
        const uint8_t *payload; /* borrowed from the decoder; valid until the next decoder call */
} ProtoFrame;

/* Header ------------------------------------------------------------------------------------ */

void proto_header_encode (uint8_t out[PROTO_HEADER_SIZE],
                          uint8_t type,
                          uint8_t flags,
                          uint32_t channel,
                          uint32_t length);

/* Validates magic, type, flags, channel rules and length; fills ret (payload NULL).
 * -EBADMSG: not a frame header; -EMSGSIZE: length above max_payload. */
int
proto_header_decode (const uint8_t in[PROTO_HEADER_SIZE], uint32_t max_payload, ProtoFrame *ret);

/* Decoder ----------------------------------------------------------------------------------- */

typedef struct {
        uint8_t *buf;
        size_t cap; /* PROTO_HEADER_SIZE + max_payload, fixed */
        size_t start; /* first unconsumed byte */
        size_t len; /* bytes after start */
        uint32_t max_payload;
        bool broken; /* a framing error was returned; only resync() or clear() continue */
} ProtoDecoder;

/* Allocates the fixed buffer once. max_payload 0 means PROTO_MAX_PAYLOAD. */
int proto_decoder_init (ProtoDecoder *dec, uint32_t max_payload);
void proto_decoder_clear (ProtoDecoder *dec);
void proto_decoder_reset (ProtoDecoder *dec);

/* Zero-copy input: returns where to read into and how much room there is. The room is 0 only
 * while the buffer holds a complete maximum-size frame: call proto_decoder_next first. After
 * reading n bytes, call proto_decoder_commit (n). */
uint8_t *proto_decoder_space (ProtoDecoder *dec, size_t *ret_size);
void proto_decoder_commit (ProtoDecoder *dec, size_t n);

/* Copying input; returns the number of bytes taken (may be less than n when the buffer is full:
 * call proto_decoder_next until it returns 0, then feed the rest). */
size_t proto_decoder_feed (ProtoDecoder *dec, const void *data, size_t n);

/* 1: *ret holds a frame (payload borrowed until the next call); 0: need more bytes;
 * <0: framing error (-EBADMSG, -EMSGSIZE); the decoder stays broken until resync or reset. */
int proto_decoder_next (ProtoDecoder *dec, ProtoFrame *ret);

/* Drop bytes up to the next position that starts a valid HELLO header. Returns 1 if one was
 * found (the decoder works again), 0 if more input is needed (keep feeding and calling resync). */
int proto_decoder_resync (ProtoDecoder *dec);

/* proto_decoder_next for a stream that cannot be closed (a virtio port), as every guest program
 * reads: a framing error is returned once; the following calls drop input up to the next HELLO
 * header (returning 0 while they look) and go on from there (SECURITY.md A1). */
int proto_decoder_next_resync (ProtoDecoder *dec, ProtoFrame *ret);
/* Makes proto_decoder_next_resync drop input up to the next HELLO header: for a stream taken up
 * again somewhere unknown (a port the host reopened). */
void proto_decoder_skip_to_hello (ProtoDecoder *dec);

/* Encoding helpers -------------------------------------------------------------------------- */

/* Writes header + payload into a new malloc'd buffer. */
int proto_frame_build (uint8_t type,
                       uint8_t flags,
                       uint32_t channel,
                       const void *payload,
                       size_t length,
                       uint8_t **ret_buf,
                       size_t *ret_len);

/* Serialises a JSON object into a control frame (HELLO/REQUEST/RESPONSE/EVENT); -EMSGSIZE when
 * the JSON exceeds PROTO_MAX_PAYLOAD. */
int proto_frame_build_json (uint8_t type, const cJSON *obj, uint8_t **ret_buf, size_t *ret_len);

void proto_put_u32 (uint8_t *p, uint32_t v);
uint32_t proto_get_u32 (const uint8_t *p);

const char *proto_frame_type_name (uint8_t type);

/* JSON -------------------------------------------------------------------------------------- */

bool proto_utf8_valid (const uint8_t *s, size_t len);

/* Validates UTF-8, nesting depth and size, then parses; the top level must be an object.
 * -EINVAL for anything else. */
int proto_json_parse (const uint8_t *payload, size_t len, cJSON **ret);

/* Typed accessors. Return 0 and write *ret when the key holds the right type and range,
 * -ENOENT when the key is absent (ret untouched), -EINVAL when present but wrong. */
int proto_json_get_string (const cJSON *obj, const char *key, size_t max_len, const char **ret);
int proto_json_get_bool (const cJSON *obj, const char *key, bool *ret);
int proto_json_get_int (const cJSON *obj, const char *key, int64_t min, int64_t max, int64_t *ret);
int proto_json_get_object (const cJSON *obj, const char *key, const cJSON **ret);
int proto_json_get_array (const cJSON *obj, const char *key, size_t max_items, const cJSON **ret);

/* Message builders (return NULL only on out-of-memory). */
cJSON *proto_request_new (uint64_t id, const char *method, cJSON *params /* (transfer full) */);
cJSON *proto_response_new (uint64_t id, cJSON *result /* (transfer full) */);
cJSON *proto_error_response_new (uint64_t id, const char *code, const char *message, int errnum);
cJSON *proto_event_new (const char *event, cJSON *params /* (transfer full) */);
cJSON *proto_error_new (const char *code, const char *message, int errnum);

/* HELLO ------------------------------------------------------------------------------------- */

/* PROTO_NONCE_HEX_LEN lowercase hex digits, nothing else. */
bool proto_nonce_valid (const char *s);

typedef struct {
        cJSON *json; /* the whole object, for the fields a peer adds (owned) */
        const char *nonce; /* borrowed from json */
        int64_t version;
        int64_t min_version; /* 1 when the peer names none */
} ProtoHello;

/* A HELLO from peer_role ("host", "fs-server"): an object with that role, a valid nonce, a
 * version ≥ 1 and, optionally, a min_version ≥ 1. 0 (release with proto_hello_clear), or
 * -EINVAL: anything else is noise, which neither ends a session nor starts one (SECURITY.md
 * A1, P5). Used by every guest program that answers the host's HELLO. */
int proto_hello_parse (const ProtoFrame *f, const char *peer_role, ProtoHello *ret);
void proto_hello_clear (ProtoHello *hello);

/* "ENOENT" for ENOENT, NULL for unknown values. */
const char *proto_errno_name (int errnum);
/* The protocol error code for an errno (ENOENT -> "not-found", ...). */
const char *proto_errno_code (int errnum);

/* Parses an incoming REQUEST/RESPONSE id. */
int proto_json_get_id (const cJSON *obj, uint64_t *ret);

/* Parses a decimal command-line number in [min, max]: digits only, no sign, no trailing text. */
bool proto_parse_u32 (const char *s, uint32_t min, uint32_t max, uint32_t *ret);

/* Fills hex with 2*n lowercase hex digits + NUL from n random bytes (getrandom). */
int proto_random_hex (char *hex, size_t n_bytes);
