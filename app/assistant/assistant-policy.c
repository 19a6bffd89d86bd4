/* assistant-policy.c — approved network access: allow rules in the VM's policy file.
 *
 * The egress daemon follows VM_DIR/egress-policy.json as soon as it changes, so adding a rule
 * here opens the host for the VM's very next request, and removing it closes it again. Rules
 * are exact hosts (with an optional port): an approval never becomes a wildcard.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "assistant-private.h"

#include "egress-policy.h"

#include <glib/gi18n-lib.h>
#include <string.h>

gboolean
assistant_rel_path_is_clean (const char *rel)
{
        g_auto (GStrv) parts = NULL;

        if (!rel || !*rel || rel[0] == '/')
                return FALSE;
        parts = g_strsplit (rel, "/", -1);
        for (guint i = 0; parts[i]; i++) {
                /* A trailing slash names the same folder. */
                if (!*parts[i] && !parts[i + 1] && i > 0)
                        continue;
                if (!*parts[i] || g_str_equal (parts[i], ".") || g_str_equal (parts[i], "..") ||
                    strpbrk (parts[i], "*?["))
                        return FALSE;
        }
        return TRUE;
}

char *
assistant_policy_normalize (const char *host, GError **error)
{
        g_autoptr (CorralEgressPolicy) scratch =
                corral_egress_policy_new (CORRAL_EGRESS_PRESET_ALLOWLIST);
        const GPtrArray *rules;

        if (strchr (host, '*')) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                             _ ("Ask for one exact host (like api.example.com or "
                                "api.example.com:443), not a wildcard."));
                return NULL;
        }
        if (!corral_egress_policy_add_rule (scratch, TRUE, host, error))
                return NULL;
        rules = corral_egress_policy_get_rules (scratch, TRUE);
        return g_strdup (rules->pdata[0]);
}

static char *
policy_path (const char *vm_dir)
{
        return g_build_filename (vm_dir, "egress-policy.json", NULL);
}

static CorralEgressPolicy *
load (const char *path, GError **error)
{
        /* The default a VM starts with when nobody set a policy (as `corralctl net`). */
        if (!g_file_test (path, G_FILE_TEST_EXISTS))
                return corral_egress_policy_new (CORRAL_EGRESS_PRESET_ALLOWLIST);
        return corral_egress_policy_load_file (path, error);
}

static gboolean
has_rule (const CorralEgressPolicy *policy, const char *rule)
{
        const GPtrArray *rules = corral_egress_policy_get_rules (policy, TRUE);

        for (guint i = 0; rules && i < rules->len; i++)
                if (g_str_equal (rules->pdata[i], rule))
                        return TRUE;
        return FALSE;
}

gboolean
assistant_policy_allow (const char *vm_dir, const char *host, char **ret_added, GError **error)
{
        g_autofree char *path = policy_path (vm_dir);
        g_autoptr (CorralEgressPolicy) loaded = load (path, error);
        g_autoptr (CorralEgressPolicy) policy = NULL;
        g_autofree char *rule = NULL;

        if (!loaded || !(rule = assistant_policy_normalize (host, error)))
                return FALSE;
        if (has_rule (loaded, rule))
                return TRUE;
        policy = corral_egress_policy_copy (loaded);
        if (!corral_egress_policy_add_rule (policy, TRUE, rule, error) ||
            !corral_egress_policy_save_file (policy, path, error))
                return FALSE;
        if (ret_added)
                *ret_added = g_steal_pointer (&rule);
        return TRUE;
}

/* The policy without the given allow rules, through its JSON form (the policy API adds rules
 * but has no way to take one away). */
static CorralEgressPolicy *
without_rules (const CorralEgressPolicy *policy, GPtrArray *rules, GError **error)
{
        g_autofree char *json = corral_egress_policy_to_json (policy);
        g_autoptr (cJSON) obj = cJSON_Parse (json);
        cJSON *allow = cJSON_GetObjectItemCaseSensitive (obj, "allow");
        char *text;
        CorralEgressPolicy *result;

        for (int i = cJSON_GetArraySize (allow) - 1; i >= 0; i--) {
                const cJSON *item = cJSON_GetArrayItem (allow, i);
                for (guint j = 0; cJSON_IsString (item) && j < rules->len; j++)
                        if (g_str_equal (item->valuestring, rules->pdata[j])) {
                                cJSON_DeleteItemFromArray (allow, i);
                                break;
                        }
        }
        text = cJSON_PrintUnformatted (obj);
        result = corral_egress_policy_new_from_json (text, strlen (text), error);
        cJSON_free (text);
        return result;
}

gboolean
assistant_policy_remove (const char *vm_dir, GPtrArray *rules, GError **error)
{
        g_autofree char *path = policy_path (vm_dir);
        g_autoptr (CorralEgressPolicy) loaded = NULL;
        g_autoptr (CorralEgressPolicy) policy = NULL;

        if (rules->len == 0)
                return TRUE;
        if (!(loaded = load (path, error)) || !(policy = without_rules (loaded, rules, error)))
                return FALSE;
        return corral_egress_policy_save_file (policy, path, error);
}

void
assistant_approval_end_task (CorralAssistantSession *self)
{
        g_autoptr (GError) error = NULL;
        cJSON *rec;

        if (!self->vm_dir || self->task_rules->len == 0)
                return;
        rec = cJSON_CreateObject ();
        cJSON_AddStringToObject (rec, "type", "network-rules-removed");
        cJSON *rules = cJSON_AddArrayToObject (rec, "rules");
        for (guint i = 0; i < self->task_rules->len; i++)
                cJSON_AddItemToArray (rules, cJSON_CreateString (self->task_rules->pdata[i]));
        if (!assistant_policy_remove (self->vm_dir, self->task_rules, &error)) {
                /* The person allowed it for this task only: say loudly that it stayed open. */
                g_warning ("Could not remove the network rules allowed for this task: %s",
                           error->message);
                cJSON_AddStringToObject (rec, "error", error->message);
        }
        assistant_store_audit (self->store, self->task_number, rec);
        g_ptr_array_set_size (self->task_rules, 0);
}
