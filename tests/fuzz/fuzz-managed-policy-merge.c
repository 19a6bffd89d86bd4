/* fuzz-managed-policy-merge.c — libFuzzer target for the managed-policy library
 * (util/corral-policy.h): files IT writes and Corral reads as untrusted input, merged.
 *
 * The input is one to three files separated by NUL bytes (a third file keeps any further NUL,
 * which must be refused). Whatever loads must merge to a policy no weaker than each of its
 * files alone, read back the same way twice, and print as JSON; whatever does not must say
 * why, naming who can fix it.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-cjson.h"
#include "corral-policy.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define ASK_IT "Ask your IT department to correct it."

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

static const char *const origins[] = { "/fuzz/a.json", "/fuzz/b.json", "/fuzz/c.json" };

static guint
split (const uint8_t *data, size_t size, const char *texts[3], gsize lengths[3])
{
        const char *p = (const char *) data, *end = p + size;
        guint n = 0;

        while (n < 2) {
                const char *nul = memchr (p, '\0', (size_t) (end - p));
                if (!nul)
                        break;
                texts[n] = p;
                lengths[n++] = (gsize) (nul - p);
                p = nul + 1;
        }
        texts[n] = p;
        lengths[n++] = (gsize) (end - p);
        return n;
}

static gboolean
version_below (const char *a, const char *b)
{
        guint x[3] = { 0 }, y[3] = { 0 };

        g_assert_cmpint (sscanf (a, "%u.%u.%u", &x[0], &x[1], &x[2]), ==, 3);
        g_assert_cmpint (sscanf (b, "%u.%u.%u", &y[0], &y[1], &y[2]), ==, 3);
        for (guint i = 0; i < 3; i++)
                if (x[i] != y[i])
                        return x[i] < y[i];
        return FALSE;
}

static void
check_allow_kept (CorralPolicy *merged, CorralPolicy *one, const char *key)
{
        guint n_one = 0, n_all = 0;
        const CorralPolicyAllowList *mine = corral_policy_get_allow_lists (one, key, &n_one, NULL);
        const CorralPolicyAllowList *all =
                corral_policy_get_allow_lists (merged, key, &n_all, NULL);
        gboolean found = FALSE;

        g_assert_cmpuint (n_one, ==, 1);
        for (guint i = 0; i < n_all; i++)
                found |= g_strv_equal (all[i].items, mine[0].items);
        g_assert_true (found);
}

/* merged is at least as restrictive as one, for every key one locks. */
static void
check_not_weaker (CorralPolicy *merged, CorralPolicy *one, const CorralPolicyKey *key)
{
        CorralPolicySetting how_one, how_all;
        gboolean b1 = FALSE, b2 = FALSE;
        gint64 i1 = 0, i2 = 0;
        guint e1 = 0, e2 = 0;
        const char *s1 = NULL, *s2 = NULL;
        const char *const *l1 = NULL, *const *l2 = NULL;
        const cJSON *o1 = NULL, *o2 = NULL;

        switch (key->kind) {
        case CORRAL_POLICY_KIND_BOOL:
                if (!corral_policy_get_bool (one, key->name, &b1, &how_one) || !how_one.locked)
                        return;
                g_assert_true (corral_policy_get_bool (merged, key->name, &b2, &how_all));
                g_assert_true (b1 != key->restrictive || b2 == key->restrictive);
                break;
        case CORRAL_POLICY_KIND_INT:
                if (!corral_policy_get_int (one, key->name, &i1, &how_one) || !how_one.locked)
                        return;
                g_assert_true (corral_policy_get_int (merged, key->name, &i2, &how_all));
                g_assert_true (key->higher_wins ? i2 >= i1 : i2 <= i1);
                break;
        case CORRAL_POLICY_KIND_ENUM:
                if (!corral_policy_get_enum (one, key->name, &e1, &how_one) || !how_one.locked)
                        return;
                g_assert_true (corral_policy_get_enum (merged, key->name, &e2, &how_all));
                g_assert_cmpuint (e2, <=, e1);
                break;
        case CORRAL_POLICY_KIND_VERSION:
        case CORRAL_POLICY_KIND_STRING:
                if (!corral_policy_get_string (one, key->name, &s1, &how_one) || !how_one.locked)
                        return;
                g_assert_true (corral_policy_get_string (merged, key->name, &s2, &how_all));
                if (key->kind == CORRAL_POLICY_KIND_STRING)
                        g_assert_cmpstr (s1, ==, s2);
                else
                        g_assert_false (version_below (s2, s1));
                break;
        case CORRAL_POLICY_KIND_DENY_LIST:
                if (!corral_policy_get_strv (one, key->name, &l1, &how_one) || !how_one.locked)
                        return;
                g_assert_true (corral_policy_get_strv (merged, key->name, &l2, &how_all));
                for (guint i = 0; l1[i]; i++)
                        g_assert_true (g_strv_contains (l2, l1[i]));
                break;
        case CORRAL_POLICY_KIND_ALLOW_LIST:
                if (!corral_policy_get_allow_lists (one, key->name, &e1, &how_one) ||
                    !how_one.locked)
                        return;
                g_assert_nonnull (corral_policy_get_allow_lists (merged, key->name, &e2, &how_all));
                check_allow_kept (merged, one, key->name);
                break;
        case CORRAL_POLICY_KIND_OBJECT_LIST:
                if (!corral_policy_get_objects (one, key->name, &o1, &how_one) || !how_one.locked)
                        return;
                g_assert_true (corral_policy_get_objects (merged, key->name, &o2, &how_all));
                g_assert_cmpint (cJSON_GetArraySize (o2), >=, cJSON_GetArraySize (o1));
                break;
        }
        g_assert_true (how_all.locked);
}

/* The checks answer, and say why when they refuse. */
static void
ask (CorralPolicy *p)
{
        static const char *const candidates[] = { "example.com", "a.example.com:443",
                                                  "/home/me/work", "anthropic", "journal" };
        const CorralPolicyKey *keys;
        CorralPolicyMode mode;
        guint n;

        keys = corral_policy_keys (&n);
        for (guint k = 0; k < n; k++) {
                if (!keys[k].blocked)
                        continue;
                for (guint c = 0; c < G_N_ELEMENTS (candidates); c++) {
                        g_autoptr (GError) error = NULL;

                        if (keys[k].format == CORRAL_POLICY_FORMAT_FOLDER &&
                            candidates[c][0] != '/')
                                continue;
                        if (!corral_policy_allows (p, keys[k].name, candidates[c], &error))
                                g_assert_error (error, CORRAL_POLICY_ERROR,
                                                CORRAL_POLICY_ERROR_BLOCKED);
                }
        }
        {
                g_autoptr (GError) error = NULL;
                if (corral_policy_max_mode_for_folder (p, "/srv/x/../y", &mode, &error))
                        g_assert_cmpint (mode, <=, CORRAL_POLICY_MODE_RW);
                else
                        g_assert_error (error, CORRAL_POLICY_ERROR, CORRAL_POLICY_ERROR_BLOCKED);
        }
        corral_policy_check_version (p, NULL, NULL);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
        const char *texts[3];
        gsize lengths[3];
        guint n = split (data, size, texts, lengths);
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralPolicy) p = corral_policy_parse_texts (n, origins, texts, lengths, &error);
        g_autoptr (CorralPolicy) again = NULL;
        g_autofree char *json = NULL, *json_again = NULL;
        g_autoptr (cJSON) parsed = NULL;
        const CorralPolicyKey *keys;
        guint n_keys;

        if (!p) {
                g_assert_error (error, CORRAL_POLICY_ERROR, CORRAL_POLICY_ERROR_INVALID);
                g_assert_true (g_str_has_suffix (error->message, ASK_IT));
                return 0;
        }
        g_assert_no_error (error);
        g_assert_cmpuint (g_strv_length ((char **) corral_policy_get_sources (p)), ==, n);
        g_assert_cmpuint (strlen (corral_policy_get_digest (p)), ==, 64);
        json = corral_policy_to_json (p);
        parsed = cJSON_Parse (json);
        g_assert_nonnull (parsed);
        again = corral_policy_parse_texts (n, origins, texts, lengths, NULL);
        g_assert_nonnull (again);
        json_again = corral_policy_to_json (again);
        g_assert_cmpstr (json, ==, json_again);
        ask (p);

        keys = corral_policy_keys (&n_keys);
        for (guint i = 0; i < n; i++) {
                /* merging only adds conflicts: each file alone loads */
                g_autoptr (CorralPolicy) one =
                        corral_policy_parse_texts (1, &origins[i], &texts[i], &lengths[i], NULL);

                g_assert_nonnull (one);
                for (guint k = 0; k < n_keys; k++)
                        check_not_weaker (p, one, &keys[k]);
        }
        return 0;
}
