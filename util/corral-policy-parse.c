/* corral-policy-parse.c — one managed-policy file's text into validated values, one per key
 * (corral-policy-private.h). The text is untrusted input: bounded before cJSON sees it, every
 * member known, every value of its type and range, and every refusal a sentence that names
 * the file, the line and the key.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-policy-private.h"

#include "corral-cjson.h"

#include <math.h>
#include <string.h>

/* Deeper than any key needs (an MCP server's env is at depth 6); cJSON recurses per level. */
#define MAX_DEPTH 32

typedef struct {
        const char *origin;
        const char *text;
        gsize len;
} Src;

#define FAIL(error, format, ...)                                                                   \
        (g_set_error (error, CORRAL_POLICY_ERROR, CORRAL_POLICY_ERROR_INVALID, format,             \
                      __VA_ARGS__, _ (CORRAL_POLICY_ASK_IT)),                                      \
         FALSE)

void
policy_value_free (PolicyValue *value)
{
        if (!value)
                return;
        g_free (value->s);
        g_strfreev (value->list);
        cJSON_Delete (value->objects);
        g_free (value);
}

static guint
line_at (const Src *s, gsize pos)
{
        guint line = 1;

        for (gsize i = 0; i < pos && i < s->len; i++)
                if (s->text[i] == '\n')
                        line++;
        return line;
}

/* The first position at or after pos that is not JSON white space (len at the end). */
static gsize
skip_space (const Src *s, gsize pos)
{
        while (pos < s->len && strchr (" \t\r\n", s->text[pos]) && s->text[pos] != '\0')
                pos++;
        return pos;
}

/* Where "name" (quoted, as written) first appears at or after from; from when it does not
 * (a name written with \u escapes). Good enough to send a person to the right line. */
static gsize
locate (const Src *s, gsize from, const char *name)
{
        g_autofree char *quoted = g_strdup_printf ("\"%s\"", name);
        const char *hit;

        if (from >= s->len)
                return from;
        hit = memmem (s->text + from, s->len - from, quoted, strlen (quoted));
        return hit ? (gsize) (hit - s->text) : from;
}

/* A name from the file, for an error message: control characters escaped. */
static char *
shown (const char *raw)
{
        GString *out = g_string_new (NULL);

        for (const char *p = raw; *p; p = g_utf8_next_char (p)) {
                gunichar c = g_utf8_get_char (p);

                if (g_unichar_iscntrl (c))
                        g_string_append_printf (out, "\\u%04x", c);
                else
                        g_string_append_unichar (out, c);
        }
        return g_string_free (out, FALSE);
}

/* Before cJSON: no NUL byte, UTF-8, no "\u0000" escape (cJSON would cut the text there), a
 * bounded depth. */
static gboolean
shape_ok (const Src *s, GError **error)
{
        const char *end = NULL;
        gboolean in_string = FALSE;
        int depth = 0;

        for (gsize i = 0; i < s->len; i++) {
                char c = s->text[i];

                if (c == '\0' || (in_string && c == '\\' && s->len - i > 5 &&
                                  memcmp (s->text + i + 1, "u0000", 5) == 0))
                        return FAIL (error,
                                     _ ("The managed policy %s is not valid JSON (line %u). %s"),
                                     s->origin, line_at (s, i));
                if (in_string) {
                        if (c == '\\')
                                i++;
                        else if (c == '"')
                                in_string = FALSE;
                } else if (c == '"') {
                        in_string = TRUE;
                } else if ((c == '{' || c == '[') && ++depth > MAX_DEPTH) {
                        return FAIL (error,
                                     _ ("The managed policy %s is not valid: it is nested too "
                                        "deeply (line %u). %s"),
                                     s->origin, line_at (s, i));
                } else if (c == '}' || c == ']') {
                        depth--;
                }
        }
        if (!g_utf8_validate_len (s->text, s->len, &end))
                return FAIL (error, _ ("The managed policy %s is not valid JSON (line %u). %s"),
                             s->origin, line_at (s, (gsize) (end - s->text)));
        return TRUE;
}

static gboolean
unknown (const Src *s, guint line, const char *name, GError **error)
{
        g_autofree char *n = shown (name);

        return FAIL (error,
                     _ ("The managed policy %s is not valid: “%s” on line %u is not a known "
                        "setting. %s"),
                     s->origin, n, line);
}

static gboolean
twice (const Src *s, guint line, const char *name, GError **error)
{
        g_autofree char *n = shown (name);

        return FAIL (error,
                     _ ("The managed policy %s is not valid: “%s” is set twice (line %u). %s"),
                     s->origin, n, line);
}

static gboolean
not_object (const Src *s, guint line, const char *name, GError **error)
{
        return FAIL (error,
                     _ ("The managed policy %s is not valid: “%s” on line %u must be an "
                        "object. %s"),
                     s->origin, name, line);
}

static gboolean
not_setting (const Src *s, guint line, const char *name, GError **error)
{
        return FAIL (error,
                     _ ("The managed policy %s is not valid: “%s” on line %u must be a value, or "
                        "an object with “value” and “locked”. %s"),
                     s->origin, name, line);
}

static gboolean
not_bool (const Src *s, guint line, const char *name, GError **error)
{
        return FAIL (error,
                     _ ("The managed policy %s is not valid: “%s” on line %u must be true or "
                        "false. %s"),
                     s->origin, name, line);
}

static gboolean
bad_text (const Src *s, guint line, const char *name, CorralPolicyFormat format, GError **error)
{
        const char *o = s->origin;

        switch (format) {
        case CORRAL_POLICY_FORMAT_TEXT:
                return FAIL (error,
                             _ ("The managed policy %s is not valid: “%s” on line %u must be a "
                                "text of at most 4096 bytes without control characters. %s"),
                             o, name, line);
        case CORRAL_POLICY_FORMAT_NAME:
                return FAIL (error,
                             _ ("The managed policy %s is not valid: “%s” on line %u must be a "
                                "name of at most 256 bytes without control characters. %s"),
                             o, name, line);
        case CORRAL_POLICY_FORMAT_FOLDER:
                return FAIL (error,
                             _ ("The managed policy %s is not valid: “%s” on line %u must be an "
                                "absolute folder, such as /srv/projects. %s"),
                             o, name, line);
        case CORRAL_POLICY_FORMAT_PATTERN:
                return FAIL (error,
                             _ ("The managed policy %s is not valid: “%s” on line %u must be a "
                                "path relative to the shared folder, such as .git/hooks/, of "
                                "at most 4096 bytes. %s"),
                             o, name, line);
        case CORRAL_POLICY_FORMAT_HOST:
                return FAIL (error,
                             _ ("The managed policy %s is not valid: “%s” on line %u must be a "
                                "host name such as example.com or *.example.com, with an "
                                "optional :PORT. %s"),
                             o, name, line);
        case CORRAL_POLICY_FORMAT_URL:
                return FAIL (error,
                             _ ("The managed policy %s is not valid: “%s” on line %u must be an "
                                "https:// address, or an http:// address of this computer, "
                                "without a user name or password. %s"),
                             o, name, line);
        case CORRAL_POLICY_FORMAT_PROVIDER:
                return FAIL (error,
                             _ ("The managed policy %s is not valid: “%s” on line %u must be "
                                "“anthropic” or “openai-compatible”. %s"),
                             o, name, line);
        case CORRAL_POLICY_FORMAT_ED25519_KEY:
                return FAIL (error,
                             _ ("The managed policy %s is not valid: “%s” on line %u must be an "
                                "Ed25519 public key: 32 bytes in base64 (44 characters). %s"),
                             o, name, line);
        case CORRAL_POLICY_FORMAT_AUDIT_DESTINATION:
                return FAIL (error,
                             _ ("The managed policy %s is not valid: “%s” on line %u must be "
                                "“journal”. %s"),
                             o, name, line);
        case CORRAL_POLICY_FORMAT_HEADER:
                return FAIL (error,
                             _ ("The managed policy %s is not valid: “%s” on line %u must be an "
                                "HTTP header name, such as Authorization. %s"),
                             o, name, line);
        case CORRAL_POLICY_FORMAT_ENV_NAME:
                return FAIL (error,
                             _ ("The managed policy %s is not valid: “%s” on line %u must be an "
                                "environment variable’s name, such as API_URL. %s"),
                             o, name, line);
        case CORRAL_POLICY_FORMAT_MODE:
                return FAIL (error,
                             _ ("The managed policy %s is not valid: “%s” on line %u must be "
                                "one of ro, rw-nodelete, rw. %s"),
                             o, name, line);
        }
        g_return_val_if_reached (FALSE);
}

/* One text of format, kept as policy_format_check keeps it. */
static gboolean
parse_text (const Src *s,
            guint line,
            const char *name,
            CorralPolicyFormat format,
            const cJSON *item,
            char **ret,
            GError **error)
{
        if (!cJSON_IsString (item) || !policy_format_check (format, item->valuestring, ret))
                return bad_text (s, line, name, format, error);
        return TRUE;
}

/* A list of at least min and at most max texts of format. */
static gboolean
parse_text_list (const Src *s,
                 guint line,
                 const char *name,
                 CorralPolicyFormat format,
                 guint min,
                 guint max,
                 const cJSON *array,
                 char ***ret,
                 GError **error)
{
        g_autoptr (GPtrArray) out = g_ptr_array_new_with_free_func (g_free);
        const cJSON *item;
        int size = cJSON_IsArray (array) ? cJSON_GetArraySize (array) : -1;

        if (size < (int) min || size > (int) max) {
                if (min > 0)
                        return FAIL (error,
                                     _ ("The managed policy %s is not valid: “%s” on line %u "
                                        "must be a list of 1 to %u entries. %s"),
                                     s->origin, name, line, max);
                return FAIL (error,
                             _ ("The managed policy %s is not valid: “%s” on line %u must be a "
                                "list of at most %u entries. %s"),
                             s->origin, name, line, max);
        }
        cJSON_ArrayForEach (item, array) {
                g_autofree char *entry = g_strdup_printf ("%s[%u]", name, out->len);
                char *kept = NULL;

                if (!parse_text (s, line, entry, format, item, &kept, error))
                        return FALSE;
                g_ptr_array_add (out, kept);
        }
        g_ptr_array_add (out, NULL);
        *ret = (char **) g_ptr_array_free (g_steal_pointer (&out), FALSE);
        return TRUE;
}

/* An object of at most max texts of format, named like environment variables. */
static gboolean
parse_text_map (const Src *s,
                guint line,
                const char *name,
                CorralPolicyFormat format,
                guint max,
                const cJSON *object,
                cJSON **ret,
                GError **error)
{
        g_autoptr (cJSON) out = cJSON_CreateObject ();
        const cJSON *item;

        if (!cJSON_IsObject (object) || cJSON_GetArraySize (object) > (int) max)
                return FAIL (error,
                             _ ("The managed policy %s is not valid: “%s” on line %u must be an "
                                "object of at most %u texts. %s"),
                             s->origin, name, line, max);
        cJSON_ArrayForEach (item, object) {
                g_autofree char *shown_name = shown (item->string);
                g_autofree char *entry = g_strdup_printf ("%s.%s", name, shown_name);
                g_autofree char *kept = NULL, *unused = NULL;

                if (!policy_format_check (CORRAL_POLICY_FORMAT_ENV_NAME, item->string, &unused))
                        return bad_text (s, line, entry, CORRAL_POLICY_FORMAT_ENV_NAME, error);
                if (cJSON_GetObjectItemCaseSensitive (out, item->string))
                        return twice (s, line, entry, error);
                if (!parse_text (s, line, entry, format, item, &kept, error))
                        return FALSE;
                cJSON_AddStringToObject (out, item->string, kept);
        }
        *ret = g_steal_pointer (&out);
        return TRUE;
}

/* Members nobody should put in a file every user of the computer can read. */
static gboolean
looks_secret (const char *name)
{
        static const char *const secret[] = { "value",    "secret", "token",
                                              "password", "apiKey", "key" };

        for (guint i = 0; i < G_N_ELEMENTS (secret); i++)
                if (g_ascii_strcasecmp (name, secret[i]) == 0)
                        return TRUE;
        return FALSE;
}

static const CorralPolicyMember *
member_lookup (const CorralPolicyKey *key, const char *name)
{
        for (const CorralPolicyMember *m = key->members; m->name; m++)
                if (g_str_equal (m->name, name))
                        return m;
        return NULL;
}

static gboolean
parse_member (const Src *s,
              guint line,
              const char *name,
              const CorralPolicyMember *m,
              const cJSON *item,
              cJSON *out,
              GError **error)
{
        g_autofree char *text = NULL;
        g_auto (GStrv) list = NULL;
        cJSON *map = NULL;

        switch (m->type) {
        case CORRAL_POLICY_MEMBER_STRING:
                if (!parse_text (s, line, name, m->format, item, &text, error))
                        return FALSE;
                cJSON_AddStringToObject (out, m->name, text);
                return TRUE;
        case CORRAL_POLICY_MEMBER_STRING_LIST:
                if (!parse_text_list (s, line, name, m->format, 1, m->max_items, item, &list,
                                      error))
                        return FALSE;
                cJSON_AddItemToObject (out, m->name,
                                       cJSON_CreateStringArray ((const char *const *) list,
                                                                (int) g_strv_length (list)));
                return TRUE;
        case CORRAL_POLICY_MEMBER_STRING_MAP:
                if (!parse_text_map (s, line, name, m->format, m->max_items, item, &map, error))
                        return FALSE;
                cJSON_AddItemToObject (out, m->name, map);
                return TRUE;
        }
        g_return_val_if_reached (FALSE);
}

/* One object of an OBJECT_LIST key (named name, "mcp.servers[1]"): a copy with only its
 * known members, in the table's order. */
static gboolean
parse_object (const Src *s,
              guint line,
              const CorralPolicyKey *key,
              const char *name,
              const cJSON *object,
              cJSON **ret,
              GError **error)
{
        g_autoptr (cJSON) out = cJSON_CreateObject ();
        const cJSON *item;

        if (!cJSON_IsObject (object))
                return not_object (s, line, name, error);
        cJSON_ArrayForEach (item, object) {
                g_autofree char *n = shown (item->string);
                g_autofree char *member = g_strdup_printf ("%s.%s", name, n);
                const CorralPolicyMember *m = member_lookup (key, item->string);

                if (looks_secret (item->string))
                        return FAIL (error,
                                     _ ("The managed policy %s is not valid: “%s” on line %u "
                                        "would put a secret in a file everyone can read; "
                                        "secrets belong in the keychain. %s"),
                                     s->origin, member, line);
                if (!m)
                        return unknown (s, line, member, error);
                if (cJSON_GetObjectItemCaseSensitive (out, m->name))
                        return twice (s, line, member, error);
                if (!parse_member (s, line, member, m, item, out, error))
                        return FALSE;
        }
        for (const CorralPolicyMember *m = key->members; m->name; m++)
                if (m->required && !cJSON_GetObjectItemCaseSensitive (out, m->name))
                        return FAIL (error,
                                     _ ("The managed policy %s is not valid: “%s” on line %u "
                                        "needs “%s”. %s"),
                                     s->origin, name, line, m->name);
        /* Back in the table's order, so that what is shown does not depend on the file's. */
        for (const CorralPolicyMember *m = key->members; m->name; m++) {
                cJSON *moved = cJSON_DetachItemFromObjectCaseSensitive (out, m->name);
                if (moved)
                        cJSON_AddItemToObject (out, m->name, moved);
        }
        *ret = g_steal_pointer (&out);
        return TRUE;
}

static gboolean
parse_objects (const Src *s,
               guint line,
               const CorralPolicyKey *key,
               const cJSON *array,
               cJSON **ret,
               GError **error)
{
        g_autoptr (cJSON) out = cJSON_CreateArray ();
        g_autoptr (GHashTable) names = g_hash_table_new (g_str_hash, g_str_equal);
        gboolean named = member_lookup (key, "name") != NULL;
        const cJSON *item;
        guint i = 0;

        if (!cJSON_IsArray (array) || cJSON_GetArraySize (array) > (int) key->max_items)
                return FAIL (error,
                             _ ("The managed policy %s is not valid: “%s” on line %u must be a "
                                "list of at most %u entries. %s"),
                             s->origin, key->name, line, key->max_items);
        cJSON_ArrayForEach (item, array) {
                g_autofree char *name = g_strdup_printf ("%s[%u]", key->name, i++);
                cJSON *object = NULL;
                const char *n;

                if (!parse_object (s, line, key, name, item, &object, error))
                        return FALSE;
                cJSON_AddItemToArray (out, object);
                n = named ? cJSON_GetStringValue (cJSON_GetObjectItemCaseSensitive (object, "name"))
                          : NULL;
                if (n && !g_hash_table_add (names, (gpointer) n))
                        return FAIL (error,
                                     _ ("The managed policy %s is not valid: “%s” on line %u "
                                        "uses the name “%s” twice. %s"),
                                     s->origin, key->name, line, n);
        }
        *ret = g_steal_pointer (&out);
        return TRUE;
}

static gboolean
parse_number (const Src *s,
              guint line,
              const CorralPolicyKey *key,
              const cJSON *value,
              PolicyValue *out,
              GError **error)
{
        double d = cJSON_IsNumber (value) ? value->valuedouble : NAN;

        if (!isfinite (d) || d != floor (d) || d < (double) key->min || d > (double) key->max)
                return FAIL (error,
                             _ ("The managed policy %s is not valid: “%s” on line %u must be a "
                                "whole number from %lld to %lld. %s"),
                             s->origin, key->name, line, (long long) key->min,
                             (long long) key->max);
        out->i = (gint64) d;
        return TRUE;
}

static gboolean
parse_enum (const Src *s,
            guint line,
            const CorralPolicyKey *key,
            const cJSON *value,
            PolicyValue *out,
            GError **error)
{
        const char *text = cJSON_GetStringValue (value);
        g_autofree char *choices = NULL;

        for (guint i = 0; text && key->values[i]; i++) {
                if (g_str_equal (text, key->values[i])) {
                        out->i = i;
                        out->s = g_strdup (text);
                        return TRUE;
                }
        }
        choices = g_strjoinv (", ", (char **) key->values);
        return FAIL (error,
                     _ ("The managed policy %s is not valid: “%s” on line %u must be one of %s. "
                        "%s"),
                     s->origin, key->name, line, choices);
}

static gboolean
parse_value (const Src *s,
             guint line,
             const CorralPolicyKey *key,
             const cJSON *value,
             PolicyValue *out,
             GError **error)
{
        guint64 parts[3];

        switch (key->kind) {
        case CORRAL_POLICY_KIND_BOOL:
                if (!cJSON_IsBool (value))
                        return not_bool (s, line, key->name, error);
                out->b = cJSON_IsTrue (value);
                return TRUE;
        case CORRAL_POLICY_KIND_INT:
                return parse_number (s, line, key, value, out, error);
        case CORRAL_POLICY_KIND_ENUM:
                return parse_enum (s, line, key, value, out, error);
        case CORRAL_POLICY_KIND_VERSION:
                if (!cJSON_IsString (value) ||
                    !policy_version_parse (value->valuestring, TRUE, parts))
                        return FAIL (error,
                                     _ ("The managed policy %s is not valid: “%s” on line %u "
                                        "must be a version such as 1.2.0. %s"),
                                     s->origin, key->name, line);
                out->s = g_strdup (value->valuestring);
                return TRUE;
        case CORRAL_POLICY_KIND_STRING:
                return parse_text (s, line, key->name, key->format, value, &out->s, error);
        case CORRAL_POLICY_KIND_DENY_LIST:
        case CORRAL_POLICY_KIND_ALLOW_LIST:
                return parse_text_list (s, line, key->name, key->format, 0, key->max_items, value,
                                        &out->list, error);
        case CORRAL_POLICY_KIND_OBJECT_LIST:
                return parse_objects (s, line, key, value, &out->objects, error);
        }
        g_return_val_if_reached (FALSE);
}

/* A key's value: plain (locked), or {"value": V, "locked": B} ("locked" left out: locked). */
static gboolean
parse_setting (const Src *s,
               gsize pos,
               const CorralPolicyKey *key,
               const cJSON *item,
               PolicyValue **values,
               GError **error)
{
        g_autoptr (PolicyValue) out = g_new0 (PolicyValue, 1);
        guint line = line_at (s, pos);
        const cJSON *value = item, *member;

        if (cJSON_IsNull (item))
                return TRUE;
        out->locked = TRUE;
        if (cJSON_IsObject (item)) {
                const cJSON *locked = NULL;

                value = NULL;
                cJSON_ArrayForEach (member, item) {
                        if (g_str_equal (member->string, "value") && !value)
                                value = member;
                        else if (g_str_equal (member->string, "locked") && !locked)
                                locked = member;
                        else
                                return not_setting (s, line, key->name, error);
                }
                if (!value || cJSON_IsNull (value))
                        return not_setting (s, line, key->name, error);
                if (locked && !cJSON_IsBool (locked)) {
                        g_autofree char *name = g_strconcat (key->name, ".locked", NULL);
                        return not_bool (s, line, name, error);
                }
                out->locked = !locked || cJSON_IsTrue (locked);
        }
        if (!parse_value (s, line, key, value, out, error))
                return FALSE;
        values[policy_key_index (key)] = g_steal_pointer (&out);
        return TRUE;
}

static gboolean
is_group (const char *name)
{
        const CorralPolicyKey *keys;
        gsize n = strlen (name);
        guint n_keys;

        keys = corral_policy_keys (&n_keys);
        for (guint i = 0; i < n_keys; i++)
                if (strncmp (keys[i].name, name, n) == 0 && keys[i].name[n] == '.')
                        return TRUE;
        return FALSE;
}

static gboolean
parse_group (const Src *s, gsize pos, const cJSON *group, PolicyValue **values, GError **error)
{
        g_autoptr (GHashTable) seen = g_hash_table_new (g_str_hash, g_str_equal);
        const cJSON *item;

        if (!cJSON_IsObject (group))
                return not_object (s, line_at (s, pos), group->string, error);
        cJSON_ArrayForEach (item, group) {
                g_autofree char *name = g_strconcat (group->string, ".", item->string, NULL);
                const CorralPolicyKey *key = corral_policy_key_lookup (name);
                gsize at = locate (s, pos, item->string);

                if (!key)
                        return unknown (s, line_at (s, at), name, error);
                if (!g_hash_table_add (seen, (gpointer) key->name))
                        return twice (s, line_at (s, locate (s, at + 1, item->string)), name,
                                      error);
                if (!parse_setting (s, at, key, item, values, error))
                        return FALSE;
        }
        return TRUE;
}

static gboolean
parse_root (const Src *s, const cJSON *root, PolicyValue **values, GError **error)
{
        g_autoptr (GHashTable) seen = g_hash_table_new (g_str_hash, g_str_equal);
        const cJSON *item;

        cJSON_ArrayForEach (item, root) {
                const CorralPolicyKey *key = corral_policy_key_lookup (item->string);
                gsize at = locate (s, 0, item->string);

                if (!g_hash_table_add (seen, item->string))
                        return twice (s, line_at (s, locate (s, at + 1, item->string)),
                                      item->string, error);
                if (key && !strchr (key->name, '.')) {
                        if (!parse_setting (s, at, key, item, values, error))
                                return FALSE;
                } else if (is_group (item->string)) {
                        if (!parse_group (s, at, item, values, error))
                                return FALSE;
                } else {
                        return unknown (s, line_at (s, at), item->string, error);
                }
        }
        return TRUE;
}

gboolean
policy_source_parse (
        const char *origin, const char *text, gsize len, PolicyValue **values, GError **error)
{
        Src s = { origin, text, len };
        g_autoptr (cJSON) root = NULL;
        g_autoptr (GPtrArray) parsed = NULL;
        const char *end = NULL;
        guint n_keys;

        corral_policy_keys (&n_keys);
        if (!shape_ok (&s, error))
                return FALSE;
        root = cJSON_ParseWithLengthOpts (text, len, &end, FALSE);
        /* Trailing text after the object is as malformed as a truncated one. */
        if (root && end)
                end = text + skip_space (&s, (gsize) (end - text));
        if (!root || !end || (gsize) (end - text) != len)
                return FAIL (error, _ ("The managed policy %s is not valid JSON (line %u). %s"),
                             origin, line_at (&s, end ? (gsize) (end - text) : len));
        if (!cJSON_IsObject (root))
                return FAIL (error,
                             _ ("The managed policy %s is not valid: it must be one JSON object "
                                "(line %u). %s"),
                             origin, line_at (&s, skip_space (&s, 0)));
        parsed = g_ptr_array_new_full (n_keys, (GDestroyNotify) policy_value_free);
        g_ptr_array_set_size (parsed, (gint) n_keys);
        if (!parse_root (&s, root, (PolicyValue **) parsed->pdata, error))
                return FALSE;
        for (guint k = 0; k < n_keys; k++)
                values[k] = g_steal_pointer (&parsed->pdata[k]);
        return TRUE;
}
