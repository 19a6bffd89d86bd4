/* proto-json.c — validated parsing and typed access for control messages.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "proto.h"

#include <errno.h>
#include <stdlib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

bool
proto_utf8_valid (const uint8_t *s, size_t len)
{
        size_t i = 0;

        while (i < len) {
                uint8_t c = s[i];
                size_t n;
                uint32_t cp;

                if (c < 0x80) {
                        i++;
                        continue;
                } else if ((c & 0xE0) == 0xC0) {
                        n = 1;
                        cp = c & 0x1F;
                } else if ((c & 0xF0) == 0xE0) {
                        n = 2;
                        cp = c & 0x0F;
                } else if ((c & 0xF8) == 0xF0) {
                        n = 3;
                        cp = c & 0x07;
                } else {
                        return false;
                }
                if (len - i <= n)
                        return false;
                for (size_t k = 1; k <= n; k++) {
                        if ((s[i + k] & 0xC0) != 0x80)
                                return false;
                        cp = (cp << 6) | (s[i + k] & 0x3F);
                }
                /* Overlong forms, surrogates and values past U+10FFFF. */
                if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
                    (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
                        return false;
                i += n + 1;
        }
        return true;
}

/* One pass over the raw text before cJSON sees it: bracket depth outside of strings (cJSON
 * recurses per level) and no "\u0000" escape inside strings (cJSON would silently cut the
 * C string there, so "a\u0000b" would reach a caller as "a"). */
static bool
json_shape_ok (const uint8_t *s, size_t len)
{
        int depth = 0;
        bool in_string = false;

        for (size_t i = 0; i < len; i++) {
                uint8_t c = s[i];

                if (in_string) {
                        if (c == '\\') {
                                if (len - i > 5 && s[i + 1] == 'u' &&
                                    memcmp (s + i + 2, "0000", 4) == 0)
                                        return false;
                                i++;
                        } else if (c == '"')
                                in_string = false;
                        continue;
                }
                if (c == '"')
                        in_string = true;
                else if (c == '{' || c == '[') {
                        if (++depth > PROTO_MAX_JSON_DEPTH)
                                return false;
                } else if (c == '}' || c == ']')
                        depth--;
        }
        return true;
}

int
proto_json_parse (const uint8_t *payload, size_t len, cJSON **ret)
{
        const char *end = NULL;
        cJSON *obj;

        if (len == 0 || len > PROTO_MAX_PAYLOAD)
                return -EINVAL;
        if (memchr (payload, '\0', len))
                return -EINVAL;
        if (!proto_utf8_valid (payload, len) || !json_shape_ok (payload, len))
                return -EINVAL;

        obj = cJSON_ParseWithLengthOpts ((const char *) payload, len, &end, false);
        if (!obj)
                return -EINVAL;
        /* Trailing garbage after the object is as malformed as a truncated one. */
        while (end && (size_t) (end - (const char *) payload) < len &&
               strchr (" \t\r\n", *end) != NULL)
                end++;
        if (!cJSON_IsObject (obj) || !end || (size_t) (end - (const char *) payload) != len) {
                cJSON_Delete (obj);
                return -EINVAL;
        }
        *ret = obj;
        return 0;
}

int
proto_json_get_string (const cJSON *obj, const char *key, size_t max_len, const char **ret)
{
        const cJSON *item = cJSON_GetObjectItemCaseSensitive (obj, key);

        if (!item || cJSON_IsNull (item))
                return -ENOENT;
        if (!cJSON_IsString (item) || !item->valuestring)
                return -EINVAL;
        if (max_len > 0 && strlen (item->valuestring) > max_len)
                return -EINVAL;
        *ret = item->valuestring;
        return 0;
}

int
proto_json_get_bool (const cJSON *obj, const char *key, bool *ret)
{
        const cJSON *item = cJSON_GetObjectItemCaseSensitive (obj, key);

        if (!item || cJSON_IsNull (item))
                return -ENOENT;
        if (!cJSON_IsBool (item))
                return -EINVAL;
        *ret = cJSON_IsTrue (item);
        return 0;
}

int
proto_json_get_int (const cJSON *obj, const char *key, int64_t min, int64_t max, int64_t *ret)
{
        const cJSON *item = cJSON_GetObjectItemCaseSensitive (obj, key);
        double v;

        if (!item || cJSON_IsNull (item))
                return -ENOENT;
        if (!cJSON_IsNumber (item))
                return -EINVAL;
        v = item->valuedouble;
        if (!isfinite (v) || v != floor (v) || v < -PROTO_MAX_ID || v > PROTO_MAX_ID)
                return -EINVAL;
        if ((int64_t) v < min || (int64_t) v > max)
                return -EINVAL;
        *ret = (int64_t) v;
        return 0;
}

int
proto_json_get_object (const cJSON *obj, const char *key, const cJSON **ret)
{
        const cJSON *item = cJSON_GetObjectItemCaseSensitive (obj, key);

        if (!item || cJSON_IsNull (item))
                return -ENOENT;
        if (!cJSON_IsObject (item))
                return -EINVAL;
        *ret = item;
        return 0;
}

int
proto_json_get_array (const cJSON *obj, const char *key, size_t max_items, const cJSON **ret)
{
        const cJSON *item = cJSON_GetObjectItemCaseSensitive (obj, key);

        if (!item || cJSON_IsNull (item))
                return -ENOENT;
        if (!cJSON_IsArray (item))
                return -EINVAL;
        if (max_items > 0 && (size_t) cJSON_GetArraySize (item) > max_items)
                return -EINVAL;
        *ret = item;
        return 0;
}

int
proto_json_get_id (const cJSON *obj, uint64_t *ret)
{
        int64_t id;
        int r = proto_json_get_int (obj, "id", 1, (int64_t) PROTO_MAX_ID, &id);

        if (r < 0)
                return r;
        *ret = (uint64_t) id;
        return 0;
}

static cJSON *
with_id (uint64_t id)
{
        cJSON *obj = cJSON_CreateObject ();

        if (obj && !cJSON_AddNumberToObject (obj, "id", (double) id)) {
                cJSON_Delete (obj);
                return NULL;
        }
        return obj;
}

/* Takes ownership of child even on failure. */
static cJSON *
add_child (cJSON *obj, const char *key, cJSON *child)
{
        if (!child)
                child = cJSON_CreateObject ();
        if (!obj || !child || !cJSON_AddItemToObject (obj, key, child)) {
                cJSON_Delete (child);
                cJSON_Delete (obj);
                return NULL;
        }
        return obj;
}

cJSON *
proto_request_new (uint64_t id, const char *method, cJSON *params)
{
        cJSON *obj = with_id (id);

        if (obj && !cJSON_AddStringToObject (obj, "method", method)) {
                cJSON_Delete (obj);
                obj = NULL;
        }
        return add_child (obj, "params", params);
}

cJSON *
proto_response_new (uint64_t id, cJSON *result)
{
        return add_child (with_id (id), "result", result);
}

cJSON *
proto_error_new (const char *code, const char *message, int errnum)
{
        cJSON *err = cJSON_CreateObject ();
        const char *name = errnum > 0 ? proto_errno_name (errnum) : NULL;

        if (!err)
                return NULL;
        if (!cJSON_AddStringToObject (err, "code", code) ||
            !cJSON_AddStringToObject (err, "message", message ? message : code) ||
            (name && !cJSON_AddStringToObject (err, "errno", name))) {
                cJSON_Delete (err);
                return NULL;
        }
        return err;
}

cJSON *
proto_error_response_new (uint64_t id, const char *code, const char *message, int errnum)
{
        return add_child (with_id (id), "error", proto_error_new (code, message, errnum));
}

cJSON *
proto_event_new (const char *event, cJSON *params)
{
        cJSON *obj = cJSON_CreateObject ();

        if (obj && !cJSON_AddStringToObject (obj, "event", event)) {
                cJSON_Delete (obj);
                obj = NULL;
        }
        return add_child (obj, "params", params);
}

/* clang-format off */
#define E(x) { x, #x }
static const struct {
        int num;
        const char *name;
} errno_names[] = {
        E (EPERM),  E (ENOENT),    E (ESRCH),        E (EINTR),     E (EIO),       E (ENXIO),
        E (E2BIG),  E (ENOEXEC),   E (EBADF),        E (ECHILD),    E (EAGAIN),    E (ENOMEM),
        E (EACCES), E (EFAULT),    E (EBUSY),        E (EEXIST),    E (EXDEV),     E (ENODEV),
        E (ENOTDIR), E (EISDIR),   E (EINVAL),       E (ENFILE),    E (EMFILE),    E (ETXTBSY),
        E (EFBIG),  E (ENOSPC),    E (ESPIPE),       E (EROFS),     E (EMLINK),    E (EPIPE),
        E (ERANGE), E (ENAMETOOLONG), E (ENOSYS),    E (ENOTEMPTY), E (ELOOP),     E (ENOTSUP),
        E (ETIMEDOUT), E (ECONNREFUSED), E (EDQUOT), E (EOVERFLOW), E (EMSGSIZE),  E (EBADMSG),
        E (EPROTO), E (ECANCELED), E (ENOTCONN),     E (ECONNRESET), E (EHOSTUNREACH),
};
#undef E
/* clang-format on */

const char *
proto_errno_name (int errnum)
{
        for (size_t i = 0; i < sizeof errno_names / sizeof errno_names[0]; i++)
                if (errno_names[i].num == errnum)
                        return errno_names[i].name;
        return NULL;
}

const char *
proto_errno_code (int errnum)
{
        switch (errnum) {
        case ENOENT:
        case ENOTDIR:
        case ESRCH:
                return "not-found";
        case EEXIST:
        case ENOTEMPTY:
                return "exists";
        case EACCES:
        case EPERM:
        case EROFS:
                return "permission-denied";
        case EFBIG:
        case E2BIG:
        case EMSGSIZE:
        case ENAMETOOLONG:
                return "too-large";
        case ETIMEDOUT:
                return "timeout";
        case EAGAIN:
        case EBUSY:
        case EMFILE:
        case ENFILE:
                return "busy";
        case EINVAL:
                return "invalid-request";
        default:
                return "io";
        }
}

int
proto_random_hex (char *hex, size_t n_bytes)
{
        uint8_t raw[64];
        size_t got = 0;

        if (n_bytes > sizeof raw)
                return -EINVAL;
        while (got < n_bytes) {
                ssize_t r = getrandom (raw + got, n_bytes - got, 0);

                if (r < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                got += (size_t) r;
        }
        for (size_t i = 0; i < n_bytes; i++)
                snprintf (hex + 2 * i, 3, "%02x", raw[i]);
        return 0;
}

bool
proto_parse_u32 (const char *s, uint32_t min, uint32_t max, uint32_t *ret)
{
        char *end;
        unsigned long long v;

        if (!s || s[0] < '0' || s[0] > '9')
                return false;
        errno = 0;
        v = strtoull (s, &end, 10);
        if (errno || *end || v < min || v > max)
                return false;
        *ret = (uint32_t) v;
        return true;
}

bool
proto_nonce_valid (const char *s)
{
        if (strlen (s) != PROTO_NONCE_HEX_LEN)
                return false;
        for (const char *p = s; *p; p++)
                if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
                        return false;
        return true;
}

int
proto_hello_parse (const ProtoFrame *f, const char *peer_role, ProtoHello *ret)
{
        const char *role;

        *ret = (ProtoHello){ .min_version = 1 };
        if (f->type != PROTO_FRAME_HELLO ||
            proto_json_parse (f->payload, f->length, &ret->json) < 0)
                return -EINVAL;
        if (proto_json_get_string (ret->json, "role", 16, &role) < 0 ||
            strcmp (role, peer_role) != 0 ||
            proto_json_get_string (ret->json, "nonce", 64, &ret->nonce) < 0 ||
            !proto_nonce_valid (ret->nonce) ||
            proto_json_get_int (ret->json, "version", 1, INT32_MAX, &ret->version) < 0 ||
            proto_json_get_int (ret->json, "min_version", 1, INT32_MAX, &ret->min_version) ==
                    -EINVAL) {
                proto_hello_clear (ret);
                return -EINVAL;
        }
        return 0;
}

void
proto_hello_clear (ProtoHello *hello)
{
        cJSON_Delete (hello->json);
        *hello = (ProtoHello){ 0 };
}
