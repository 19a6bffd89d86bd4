/* corral-computer-log.c — see corral-computer-log.h.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-computer-log.h"

#include "corral-audit-log.h"
#include "corral-policy.h"

void
corral_computer_log (const char *vm_dir,
                     const char *by,
                     const cJSON *input,
                     const char *result,
                     const GError *error)
{
        g_autofree char *path = NULL;
        g_autoptr (GError) local = NULL;
        g_autoptr (CorralAuditLog) log = NULL;
        g_autoptr (CorralPolicy) policy = NULL;
        g_autoptr (GDateTime) now = g_date_time_new_now_utc ();
        g_autofree char *time = g_date_time_format_iso8601 (now);
        cJSON *line;

        g_return_if_fail (vm_dir != NULL && by != NULL);
        path = g_build_filename (vm_dir, "computer.jsonl", NULL);
        log = corral_audit_log_open (path, &local);
        if (!log) {
                g_warning ("%s", local->message);
                return;
        }
        policy = corral_policy_load_default (NULL);
        if (policy && corral_policy_audit_copies_to (policy, "journal"))
                corral_audit_log_set_journal (log, TRUE, NULL);
        line = cJSON_CreateObject ();
        cJSON_AddStringToObject (line, "time", time);
        cJSON_AddStringToObject (line, "by", by);
        if (input)
                cJSON_AddItemToObject (line, "input", cJSON_Duplicate (input, TRUE));
        if (error)
                cJSON_AddStringToObject (line, "error", error->message);
        else if (result)
                cJSON_AddStringToObject (line, "result", result);
        corral_audit_log_append (log, line, NULL);
}
