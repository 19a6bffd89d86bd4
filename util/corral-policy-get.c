/* corral-policy-get.c — what callers ask of a loaded managed policy: its settings by key, the
 * checks made where a decision is made (allow and deny lists, the version, a folder's mode),
 * and the whole of it as JSON (corral-policy.h).
 *
 * The checks enforce locked settings only: a default ({"locked": false}) is where the
 * person's own setting starts, which the person may change; callers read it with the getters.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-policy-private.h"

#include "corral-cjson.h"

#include <string.h>

static const char *const no_sources[] = { NULL };

const char *
corral_policy_get_digest (CorralPolicy *policy)
{
        g_return_val_if_fail (policy != NULL, NULL);

        return policy->digest;
}

const char *const *
corral_policy_get_sources (CorralPolicy *policy)
{
        g_return_val_if_fail (policy != NULL, NULL);

        return (const char *const *) policy->sources;
}

/* The merged setting of name, when name is a key whose kind is in kinds (a bit mask of
 * 1 << CorralPolicyKind); NULL (a programmer error) otherwise. */
static const PolicyMerged *
lookup (CorralPolicy *policy, const char *name, guint kinds, const CorralPolicyKey **ret_key)
{
        const CorralPolicyKey *key;

        g_return_val_if_fail (policy != NULL && name != NULL, NULL);
        key = corral_policy_key_lookup (name);
        g_return_val_if_fail (key != NULL, NULL);
        g_return_val_if_fail (kinds & (1u << key->kind), NULL);
        if (ret_key)
                *ret_key = key;
        return &policy->merged[policy_key_index (key)];
}

#define KIND(k) (1u << CORRAL_POLICY_KIND_##k)

/* Whether m is set; *ret_setting is filled either way. */
static gboolean
setting (const PolicyMerged *m, CorralPolicySetting *ret_setting)
{
        if (ret_setting) {
                ret_setting->locked = m->set && m->locked;
                ret_setting->sources = m->set ? (const char *const *) m->sources
                                              : (const char *const *) no_sources;
        }
        return m->set;
}

gboolean
corral_policy_get_bool (CorralPolicy *policy,
                        const char *key,
                        gboolean *ret_value,
                        CorralPolicySetting *ret_setting)
{
        const PolicyMerged *m = lookup (policy, key, KIND (BOOL), NULL);

        if (!m || !setting (m, ret_setting))
                return FALSE;
        *ret_value = m->b;
        return TRUE;
}

gboolean
corral_policy_get_int (CorralPolicy *policy,
                       const char *key,
                       gint64 *ret_value,
                       CorralPolicySetting *ret_setting)
{
        const PolicyMerged *m = lookup (policy, key, KIND (INT), NULL);

        if (!m || !setting (m, ret_setting))
                return FALSE;
        *ret_value = m->i;
        return TRUE;
}

gboolean
corral_policy_get_enum (CorralPolicy *policy,
                        const char *key,
                        guint *ret_index,
                        CorralPolicySetting *ret_setting)
{
        const PolicyMerged *m = lookup (policy, key, KIND (ENUM), NULL);

        if (!m || !setting (m, ret_setting))
                return FALSE;
        *ret_index = (guint) m->i;
        return TRUE;
}

gboolean
corral_policy_get_string (CorralPolicy *policy,
                          const char *key,
                          const char **ret_value,
                          CorralPolicySetting *ret_setting)
{
        const PolicyMerged *m =
                lookup (policy, key, KIND (ENUM) | KIND (VERSION) | KIND (STRING), NULL);

        if (!m || !setting (m, ret_setting))
                return FALSE;
        *ret_value = m->s;
        return TRUE;
}

gboolean
corral_policy_get_strv (CorralPolicy *policy,
                        const char *key,
                        const char *const **ret_value,
                        CorralPolicySetting *ret_setting)
{
        const PolicyMerged *m = lookup (policy, key, KIND (DENY_LIST), NULL);

        if (!m || !setting (m, ret_setting))
                return FALSE;
        *ret_value = (const char *const *) m->list;
        return TRUE;
}

gboolean
corral_policy_get_objects (CorralPolicy *policy,
                           const char *key,
                           const cJSON **ret_value,
                           CorralPolicySetting *ret_setting)
{
        const PolicyMerged *m = lookup (policy, key, KIND (OBJECT_LIST), NULL);

        if (!m || !setting (m, ret_setting))
                return FALSE;
        *ret_value = m->objects;
        return TRUE;
}

const CorralPolicyAllowList *
corral_policy_get_allow_lists (CorralPolicy *policy,
                               const char *key,
                               guint *ret_n,
                               CorralPolicySetting *ret_setting)
{
        const PolicyMerged *m = lookup (policy, key, KIND (ALLOW_LIST), NULL);

        g_return_val_if_fail (ret_n != NULL, NULL);
        *ret_n = 0;
        if (!m || !setting (m, ret_setting))
                return NULL;
        *ret_n = m->n_allow;
        return m->allow;
}

/* Checks ------------------------------------------------------------------------------------- */

static gboolean
list_matches (CorralPolicyFormat format, const char *const *list, const char *candidate)
{
        for (guint i = 0; list[i]; i++)
                if (policy_format_matches (format, list[i], candidate))
                        return TRUE;
        return FALSE;
}

/* The table's sentences are N_() literals with exactly one %s (tests/unit/test-policy.c). */
static gboolean
blocked (const CorralPolicyKey *key, const char *candidate, GError **error)
{
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
        g_set_error (error, CORRAL_POLICY_ERROR, CORRAL_POLICY_ERROR_BLOCKED, _ (key->blocked),
                     candidate);
#pragma GCC diagnostic pop
        return FALSE;
}

gboolean
corral_policy_allows (CorralPolicy *policy, const char *key, const char *candidate, GError **error)
{
        const CorralPolicyKey *k = NULL;
        const PolicyMerged *m = lookup (policy, key, KIND (ALLOW_LIST) | KIND (DENY_LIST), &k);

        g_return_val_if_fail (m != NULL && k->blocked != NULL && candidate != NULL, FALSE);
        g_return_val_if_fail (
                k->format != CORRAL_POLICY_FORMAT_FOLDER || g_path_is_absolute (candidate), FALSE);

        if (!m->set || !m->locked)
                return TRUE;
        if (k->kind == CORRAL_POLICY_KIND_DENY_LIST)
                return !list_matches (k->format, (const char *const *) m->list, candidate) ||
                       blocked (k, candidate, error);
        for (guint i = 0; i < m->n_allow; i++)
                if (!list_matches (k->format, m->allow[i].items, candidate))
                        return blocked (k, candidate, error);
        return TRUE;
}

gboolean
corral_policy_check_version (CorralPolicy *policy, const char *version, GError **error)
{
        const char *running = version ? version : CORRAL_VERSION;
        const char *minimum = NULL;
        CorralPolicySetting how;
        guint64 have[3], need[3];

        if (!corral_policy_get_string (policy, "minimumVersion", &minimum, &how) || !how.locked)
                return TRUE;
        policy_version_parse (minimum, TRUE, need);
        /* A version that cannot be read is not known to be recent enough. */
        if (policy_version_parse (running, FALSE, have) && policy_version_compare (have, need) >= 0)
                return TRUE;
        g_set_error (error, CORRAL_POLICY_ERROR, CORRAL_POLICY_ERROR_BLOCKED,
                     _ ("Corral %s is older than %s, the lowest version allowed to run (set by "
                        "your organisation)."),
                     running, minimum);
        return FALSE;
}

gboolean
corral_policy_max_mode_for_folder (CorralPolicy *policy,
                                   const char *folder,
                                   CorralPolicyMode *ret_max_mode,
                                   GError **error)
{
        CorralPolicyMode mode = CORRAL_POLICY_MODE_RW;
        CorralPolicySetting how;
        const cJSON *entries = NULL, *entry;
        guint index;

        g_return_val_if_fail (folder != NULL && g_path_is_absolute (folder), FALSE);
        g_return_val_if_fail (ret_max_mode != NULL, FALSE);

        if (!corral_policy_allows (policy, "sharedFolders.deniedFolders", folder, error) ||
            !corral_policy_allows (policy, "sharedFolders.allowedFolders", folder, error))
                return FALSE;
        if (corral_policy_get_enum (policy, "sharedFolders.maxMode", &index, &how) && how.locked)
                mode = MIN (mode, (CorralPolicyMode) index);
        if (corral_policy_get_objects (policy, "sharedFolders.folderModes", &entries, &how) &&
            how.locked) {
                cJSON_ArrayForEach (entry, entries) {
                        const char *f = cJSON_GetStringValue (
                                cJSON_GetObjectItemCaseSensitive (entry, "folder"));
                        const char *limit = cJSON_GetStringValue (
                                cJSON_GetObjectItemCaseSensitive (entry, "maxMode"));

                        if (!policy_format_matches (CORRAL_POLICY_FORMAT_FOLDER, f, folder))
                                continue;
                        if (g_str_equal (limit, "ro"))
                                mode = CORRAL_POLICY_MODE_RO;
                        else if (g_str_equal (limit, "rw-nodelete"))
                                mode = MIN (mode, CORRAL_POLICY_MODE_RW_NODELETE);
                }
        }
        *ret_max_mode = mode;
        return TRUE;
}

/* JSON --------------------------------------------------------------------------------------- */

static cJSON *
value_json (const CorralPolicyKey *key, const PolicyMerged *m)
{
        cJSON *list;

        switch (key->kind) {
        case CORRAL_POLICY_KIND_BOOL:
                return cJSON_CreateBool (m->b);
        case CORRAL_POLICY_KIND_INT:
                return cJSON_CreateNumber ((double) m->i);
        case CORRAL_POLICY_KIND_ENUM:
        case CORRAL_POLICY_KIND_VERSION:
        case CORRAL_POLICY_KIND_STRING:
                return cJSON_CreateString (m->s);
        case CORRAL_POLICY_KIND_DENY_LIST:
                return cJSON_CreateStringArray ((const char *const *) m->list,
                                                (int) g_strv_length (m->list));
        case CORRAL_POLICY_KIND_ALLOW_LIST:
                list = cJSON_CreateArray ();
                for (guint i = 0; i < m->n_allow; i++) {
                        cJSON *one = cJSON_CreateObject ();
                        const char *const *items = m->allow[i].items;

                        cJSON_AddStringToObject (one, "source", m->allow[i].source);
                        cJSON_AddItemToObject (
                                one, "allowed",
                                cJSON_CreateStringArray (items,
                                                         (int) g_strv_length ((char **) items)));
                        cJSON_AddItemToArray (list, one);
                }
                return list;
        case CORRAL_POLICY_KIND_OBJECT_LIST:
                return cJSON_Duplicate (m->objects, TRUE);
        }
        g_return_val_if_reached (cJSON_CreateNull ());
}

char *
corral_policy_to_json (CorralPolicy *policy)
{
        g_autoptr (cJSON) root = cJSON_CreateObject ();
        cJSON *settings;
        const CorralPolicyKey *keys;
        guint n;

        g_return_val_if_fail (policy != NULL, NULL);

        keys = corral_policy_keys (&n);
        cJSON_AddStringToObject (root, "digest", policy->digest);
        cJSON_AddItemToObject (root, "sources",
                               cJSON_CreateStringArray ((const char *const *) policy->sources,
                                                        (int) g_strv_length (policy->sources)));
        settings = cJSON_AddObjectToObject (root, "settings");
        for (guint k = 0; k < n; k++) {
                const PolicyMerged *m = &policy->merged[k];
                cJSON *one = cJSON_AddObjectToObject (settings, keys[k].name);

                cJSON_AddBoolToObject (one, "set", m->set);
                if (!m->set)
                        continue;
                cJSON_AddItemToObject (one, "value", value_json (&keys[k], m));
                cJSON_AddBoolToObject (one, "locked", m->locked);
                cJSON_AddItemToObject (one, "sources",
                                       cJSON_CreateStringArray ((const char *const *) m->sources,
                                                                (int) g_strv_length (m->sources)));
        }
        return cJSON_Print (root);
}
