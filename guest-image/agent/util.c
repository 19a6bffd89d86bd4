/* util.c — parameter validation and JSON helpers shared by the request handlers.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "agent.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void
param_error (Agent *a, uint64_t id, const char *key, int r)
{
        char msg[128];

        snprintf (msg, sizeof msg, "%s parameter: %s", r == -ENOENT ? "missing" : "invalid", key);
        agent_respond_error (a, id, "invalid-request", msg, 0);
}

const char *
path_param (Agent *a, uint64_t id, const cJSON *params, const char *key)
{
        const char *path;
        int r = proto_json_get_string (params, key, AGENT_PATH_MAX - 1, &path);

        if (r < 0) {
                param_error (a, id, key, r);
                return NULL;
        }
        if (path[0] != '/') {
                agent_respond_error (a, id, "invalid-request", "paths must be absolute", 0);
                return NULL;
        }
        return path;
}

int
int_param (Agent *a,
           uint64_t id,
           const cJSON *params,
           const char *key,
           int64_t min,
           int64_t max,
           int64_t *ret)
{
        int r = proto_json_get_int (params, key, min, max, ret);

        if (r == -ENOENT)
                return 0;
        if (r < 0) {
                param_error (a, id, key, r);
                return -1;
        }
        return 1;
}

int
bool_param (Agent *a, uint64_t id, const cJSON *params, const char *key, bool *ret)
{
        int r = proto_json_get_bool (params, key, ret);

        if (r == -ENOENT)
                return 0;
        if (r < 0) {
                param_error (a, id, key, r);
                return -1;
        }
        return 1;
}

/* Length of the valid UTF-8 sequence at s (1..4), 0 when invalid. */
static size_t
utf8_seq (const uint8_t *s, size_t n)
{
        size_t k;

        if (s[0] < 0x80)
                return 1;
        if ((s[0] & 0xE0) == 0xC0)
                k = 2;
        else if ((s[0] & 0xF0) == 0xE0)
                k = 3;
        else if ((s[0] & 0xF8) == 0xF0)
                k = 4;
        else
                return 0;
        if (k > n)
                return 0;
        return proto_utf8_valid (s, k) ? k : 0;
}

cJSON *
json_string_from_bytes (const char *s, size_t len)
{
        const uint8_t *p = (const uint8_t *) s;
        char *buf;
        size_t o = 0;
        cJSON *str;

        /* Every byte becomes at most the 3 bytes of U+FFFD. */
        buf = malloc (len * 3 + 1);
        if (!buf)
                return NULL;
        for (size_t i = 0; i < len;) {
                size_t k = p[i] == 0 ? 0 : utf8_seq (p + i, len - i);

                if (k == 0) {
                        memcpy (buf + o, "\xEF\xBF\xBD", 3);
                        o += 3;
                        i++;
                } else {
                        memcpy (buf + o, p + i, k);
                        o += k;
                        i += k;
                }
        }
        buf[o] = '\0';
        str = cJSON_CreateString (buf);
        free (buf);
        return str;
}

size_t
json_cost (const char *s, size_t len)
{
        size_t n = 2;

        for (size_t i = 0; i < len; i++) {
                uint8_t c = (uint8_t) s[i];

                /* \u00XX escapes; U+FFFD for a byte of an invalid sequence. */
                n += c < 0x20 ? 6 : c == '"' || c == '\\' ? 2 : c >= 0x80 ? 3 : 1;
        }
        return n;
}

bool
json_add_string_bytes (cJSON *obj, const char *key, const char *s, size_t len)
{
        cJSON *str = json_string_from_bytes (s, len);

        if (!str)
                return false;
        if (!cJSON_AddItemToObject (obj, key, str)) {
                cJSON_Delete (str);
                return false;
        }
        return true;
}

bool
json_add_number (cJSON *obj, const char *key, double v)
{
        return cJSON_AddNumberToObject (obj, key, v) != NULL;
}
