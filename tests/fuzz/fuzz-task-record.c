/* fuzz-task-record.c — libFuzzer target for the app's task records
 * ($XDG_STATE_HOME/corral/tasks/VM.json), read back as untrusted files: a record that parses
 * is printed again and must parse to the same task.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-task-record.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralTaskRecord) record =
                corral_task_record_from_json ((const char *) data, size, &error);
        g_autoptr (CorralTaskRecord) again = NULL;
        g_autofree char *text = NULL;

        if (!record) {
                g_assert_nonnull (error);
                return 0;
        }
        text = corral_task_record_to_json (record);
        again = corral_task_record_from_json (text, strlen (text), NULL);
        g_assert_nonnull (again);
        g_assert_cmpstr (again->vm_name, ==, record->vm_name);
        g_assert_cmpstr (again->session_id, ==, record->session_id);
        g_assert_cmpstr (again->title, ==, record->title);
        g_assert_cmpint (again->created, ==, record->created);
        g_assert_cmpstr (again->config->folder, ==, record->config->folder);
        g_assert_cmpint (again->config->mode, ==, record->config->mode);
        g_assert_cmpstr (again->config->image, ==, record->config->image);
        g_assert_cmpuint (again->config->memory_mib, ==, record->config->memory_mib);
        g_assert_cmpuint (again->config->vcpus, ==, record->config->vcpus);
        g_assert_cmpstr (again->config->network_preset, ==, record->config->network_preset);
        g_assert_true (g_strv_equal ((const char *const *) again->config->network_allow,
                                     (const char *const *) record->config->network_allow));
        g_assert_cmpint (again->config->unconfined_commands, ==,
                         record->config->unconfined_commands);
        return 0;
}
