/* corral-task-record.c — one small JSON file per task, outside its VM folder.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-task-record.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <glib/gi18n.h>
#include <glib/gstdio.h>
#include <math.h>

#include "assistant-store.h"
#include "corral-domain-xml.h"
#include "corral-image.h"
#include "egress-policy.h"

#define RECORD_VERSION 1
#define MAX_PATH_BYTES 4096
#define MAX_RULE_BYTES 512

/* One writer at a time: the window records the task, the agent source its session. */
static GMutex record_lock;

void
corral_task_record_free (CorralTaskRecord *record)
{
        if (!record)
                return;
        g_free (record->vm_name);
        corral_task_config_free (record->config);
        g_free (record->session_id);
        g_free (record->title);
        g_free (record);
}

char *
corral_task_record_dir (void)
{
        return g_build_filename (g_get_user_state_dir (), "corral", "tasks", NULL);
}

static char *
record_path (const char *vm_name)
{
        g_autofree char *dir = corral_task_record_dir ();
        g_autofree char *file = g_strconcat (vm_name, ".json", NULL);

        return g_build_filename (dir, file, NULL);
}

/* Parsing ------------------------------------------------------------------------------------- */

static gboolean G_GNUC_PRINTF (2, 3) invalid (GError **error, const char *format, ...)
{
        va_list args;
        g_autofree char *what = NULL;

        va_start (args, format);
        what = g_strdup_vprintf (format, args);
        va_end (args);
        g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                     /* Translators: %s says what is wrong, e.g. “folder is not absolute” */
                     _ ("The task's record is damaged: %s"), what);
        return FALSE;
}

/* (nullable) a bounded UTF-8 string member, or NULL when absent and optional */
static gboolean
get_string (const cJSON *obj,
            const char *key,
            gsize max,
            gboolean optional,
            const char **ret,
            GError **error)
{
        const cJSON *item = cJSON_GetObjectItemCaseSensitive (obj, key);

        *ret = NULL;
        if (!item && optional)
                return TRUE;
        if (!cJSON_IsString (item) || !item->valuestring)
                return invalid (error, _ ("“%s” is missing or not text"), key);
        if (strlen (item->valuestring) > max || !g_utf8_validate (item->valuestring, -1, NULL))
                return invalid (error, _ ("“%s” is too long or not UTF-8"), key);
        *ret = item->valuestring;
        return TRUE;
}

static gboolean
get_int (const cJSON *obj, const char *key, double min, double max, double *ret, GError **error)
{
        const cJSON *item = cJSON_GetObjectItemCaseSensitive (obj, key);

        if (!cJSON_IsNumber (item) || !isfinite (item->valuedouble) || item->valuedouble < min ||
            item->valuedouble > max || floor (item->valuedouble) != item->valuedouble)
                return invalid (error, _ ("“%s” is missing or out of range"), key);
        *ret = item->valuedouble;
        return TRUE;
}

static gboolean
parse_config (const cJSON *obj, CorralTaskConfig *config, GError **error)
{
        const cJSON *allow = cJSON_GetObjectItemCaseSensitive (obj, "network_allow");
        const cJSON *unconfined = cJSON_GetObjectItemCaseSensitive (obj, "unconfined_commands");
        const cJSON *computer = cJSON_GetObjectItemCaseSensitive (obj, "computer_use");
        const char *folder, *mode, *image, *preset;
        CorralEgressPreset preset_value;
        double memory, vcpus;
        GPtrArray *rules;
        const cJSON *rule;

        if (!get_string (obj, "folder", MAX_PATH_BYTES, FALSE, &folder, error) ||
            !get_string (obj, "mode", 32, FALSE, &mode, error) ||
            !get_string (obj, "image", 64, FALSE, &image, error) ||
            !get_string (obj, "network_preset", 32, FALSE, &preset, error) ||
            !get_int (obj, "memory_mib", 256, 65536, &memory, error) ||
            !get_int (obj, "vcpus", 1, 64, &vcpus, error))
                return FALSE;
        if (!g_path_is_absolute (folder))
                return invalid (error, _ ("the folder is not an absolute path"));
        if (!fs_mode_parse (mode, &config->mode))
                return invalid (error, _ ("unknown mode “%s”"), mode);
        if (!corral_image_name_is_valid (image))
                return invalid (error, _ ("unknown image"));
        if (!corral_egress_preset_from_string (preset, &preset_value))
                return invalid (error, _ ("unknown network preset"));
        /* Absent in records written before the setting, and whenever it is off. */
        if (unconfined && !cJSON_IsBool (unconfined))
                return invalid (error, _ ("“%s” is not true or false"), "unconfined_commands");
        if (computer && !cJSON_IsBool (computer))
                return invalid (error, _ ("“%s” is not true or false"), "computer_use");
        if (allow &&
            (!cJSON_IsArray (allow) || cJSON_GetArraySize (allow) > CORRAL_TASK_RECORD_MAX_RULES))
                return invalid (error, _ ("“network_allow” is not a list of at most %d rules"),
                                CORRAL_TASK_RECORD_MAX_RULES);
        rules = g_ptr_array_new_with_free_func (g_free);
        cJSON_ArrayForEach (rule, allow) {
                if (!cJSON_IsString (rule) || !rule->valuestring || !*rule->valuestring ||
                    strlen (rule->valuestring) > MAX_RULE_BYTES ||
                    !g_utf8_validate (rule->valuestring, -1, NULL)) {
                        g_ptr_array_unref (rules);
                        return invalid (error, _ ("a network rule is not text"));
                }
                g_ptr_array_add (rules, g_strdup (rule->valuestring));
        }
        g_ptr_array_add (rules, NULL);
        config->network_allow = (char **) g_ptr_array_free (rules, FALSE);
        config->folder = g_strdup (folder);
        config->image = g_strdup (image);
        config->network_preset = g_strdup (preset);
        config->memory_mib = (guint) memory;
        config->vcpus = (guint) vcpus;
        config->unconfined_commands = cJSON_IsTrue (unconfined);
        config->computer_use = cJSON_IsTrue (computer);
        return TRUE;
}

/* One line of text, nothing a terminal or a label would act on, not blank. */
static gboolean
title_is_clean (const char *title)
{
        gboolean blank = TRUE;

        for (const char *p = title; *p; p = g_utf8_next_char (p)) {
                gunichar c = g_utf8_get_char (p);

                if (g_unichar_iscntrl (c) || g_unichar_type (c) == G_UNICODE_FORMAT ||
                    g_unichar_type (c) == G_UNICODE_LINE_SEPARATOR ||
                    g_unichar_type (c) == G_UNICODE_PARAGRAPH_SEPARATOR)
                        return FALSE;
                if (!g_unichar_isspace (c))
                        blank = FALSE;
        }
        return !blank;
}

char *
corral_task_record_make_title (const char *text)
{
        g_autoptr (GString) out = g_string_new (NULL);
        gboolean space = FALSE;

        if (!text || !g_utf8_validate (text, -1, NULL))
                return NULL;
        for (const char *p = text; *p; p = g_utf8_next_char (p)) {
                gunichar c = g_utf8_get_char (p);
                GUnicodeType type = g_unichar_type (c);

                /* Line breaks and tabs become one space; other controls and format characters
                 * (bidi overrides) go. */
                if (g_unichar_isspace (c) || type == G_UNICODE_LINE_SEPARATOR ||
                    type == G_UNICODE_PARAGRAPH_SEPARATOR) {
                        space = out->len > 0;
                        continue;
                }
                if (g_unichar_iscntrl (c) || type == G_UNICODE_FORMAT)
                        continue;
                if (space)
                        g_string_append_c (out, ' ');
                space = FALSE;
                g_string_append_unichar (out, c);
        }
        if (out->len > CORRAL_TASK_RECORD_MAX_TITLE) {
                const char *end = out->str + CORRAL_TASK_RECORD_MAX_TITLE - strlen ("…");

                /* Back to the start of the character that would not fit whole. */
                end = g_utf8_find_prev_char (out->str, end + 1);
                g_string_truncate (out, (gsize) (end - out->str));
                while (out->len && out->str[out->len - 1] == ' ')
                        g_string_truncate (out, out->len - 1);
                g_string_append (out, "…");
        }
        return out->len ? g_string_free (g_steal_pointer (&out), FALSE) : NULL;
}

CorralTaskRecord *
corral_task_record_from_json (const char *text, gsize len, GError **error)
{
        g_autoptr (CorralTaskRecord) record = g_new0 (CorralTaskRecord, 1);
        cJSON *root;
        const char *vm_name, *session, *title;
        double version, created;
        gboolean ok;

        g_return_val_if_fail (text != NULL || len == 0, NULL);

        if (len > CORRAL_TASK_RECORD_MAX_BYTES) {
                invalid (error, _ ("it is larger than %d KiB"),
                         CORRAL_TASK_RECORD_MAX_BYTES / 1024);
                return NULL;
        }
        root = cJSON_ParseWithLength (text, len);
        if (!cJSON_IsObject (root)) {
                cJSON_Delete (root);
                invalid (error, _ ("it is not a JSON object"));
                return NULL;
        }
        record->config = g_new0 (CorralTaskConfig, 1);
        ok = get_int (root, "version", RECORD_VERSION, RECORD_VERSION, &version, error) &&
             get_string (root, "vm", 64, FALSE, &vm_name, error) &&
             get_string (root, "session", 64, TRUE, &session, error) &&
             get_string (root, "title", CORRAL_TASK_RECORD_MAX_TITLE, TRUE, &title, error) &&
             get_int (root, "created", 0, 1e15, &created, error) &&
             parse_config (root, record->config, error);
        if (ok && !corral_domain_name_is_valid (vm_name))
                ok = invalid (error, _ ("the workspace name is not valid"));
        if (ok && session && !corral_assistant_store_id_is_valid (session))
                ok = invalid (error, _ ("the session id is not valid"));
        if (ok && title && !title_is_clean (title))
                ok = invalid (error, _ ("the title is not one line of text"));
        if (ok) {
                record->vm_name = g_strdup (vm_name);
                record->session_id = g_strdup (session);
                record->title = g_strdup (title);
                record->created = (gint64) created;
        }
        cJSON_Delete (root);
        return ok ? g_steal_pointer (&record) : NULL;
}

char *
corral_task_record_to_json (const CorralTaskRecord *record)
{
        const CorralTaskConfig *config = record->config;
        cJSON *root = cJSON_CreateObject ();
        cJSON *allow = cJSON_AddArrayToObject (root, "network_allow");
        char *text;

        cJSON_AddNumberToObject (root, "version", RECORD_VERSION);
        cJSON_AddStringToObject (root, "vm", record->vm_name);
        if (record->session_id)
                cJSON_AddStringToObject (root, "session", record->session_id);
        if (record->title)
                cJSON_AddStringToObject (root, "title", record->title);
        cJSON_AddNumberToObject (root, "created", (double) record->created);
        cJSON_AddStringToObject (root, "folder", config->folder);
        cJSON_AddStringToObject (root, "mode", fs_mode_to_string (config->mode));
        cJSON_AddStringToObject (root, "image", config->image);
        cJSON_AddNumberToObject (root, "memory_mib", config->memory_mib);
        cJSON_AddNumberToObject (root, "vcpus", config->vcpus);
        cJSON_AddStringToObject (root, "network_preset", config->network_preset);
        for (guint i = 0; config->network_allow && config->network_allow[i]; i++)
                cJSON_AddItemToArray (allow, cJSON_CreateString (config->network_allow[i]));
        if (config->unconfined_commands)
                cJSON_AddTrueToObject (root, "unconfined_commands");
        if (config->computer_use)
                cJSON_AddTrueToObject (root, "computer_use");
        text = cJSON_Print (root);
        cJSON_Delete (root);
        return text;
}

/* Files --------------------------------------------------------------------------------------- */

static CorralTaskRecord *
load_locked (const char *vm_name, GError **error)
{
        g_autofree char *path = NULL;
        g_autofree char *text = NULL;
        g_autoptr (GError) local = NULL;
        CorralTaskRecord *record;
        gsize len = 0;
        GStatBuf st;

        if (!corral_domain_name_is_valid (vm_name)) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                             _ ("“%s” is not a workspace name"), vm_name);
                return NULL;
        }
        path = record_path (vm_name);
        /* Bounded before reading: a record is never more than a few hundred bytes. */
        if (g_lstat (path, &st) < 0 || !S_ISREG (st.st_mode)) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                             _ ("Corral has no record of the task %s"), vm_name);
                return NULL;
        }
        if (st.st_size > CORRAL_TASK_RECORD_MAX_BYTES) {
                invalid (error, _ ("it is larger than %d KiB"),
                         CORRAL_TASK_RECORD_MAX_BYTES / 1024);
                return NULL;
        }
        if (!g_file_get_contents (path, &text, &len, error))
                return NULL;
        record = corral_task_record_from_json (text, len, &local);
        if (record && !g_str_equal (record->vm_name, vm_name)) {
                g_clear_pointer (&record, corral_task_record_free);
                invalid (&local, _ ("it belongs to another workspace"));
        }
        if (!record)
                g_propagate_error (error, g_steal_pointer (&local));
        return record;
}

CorralTaskRecord *
corral_task_record_load (const char *vm_name, GError **error)
{
        G_GNUC_UNUSED g_autoptr (GMutexLocker) locker = g_mutex_locker_new (&record_lock);

        g_return_val_if_fail (vm_name != NULL, NULL);
        return load_locked (vm_name, error);
}

static gboolean
write_locked (const CorralTaskRecord *record, GError **error)
{
        g_autofree char *dir = corral_task_record_dir ();
        g_autofree char *path = record_path (record->vm_name);
        g_autofree char *text = corral_task_record_to_json (record);

        if (g_mkdir_with_parents (dir, 0700) < 0) {
                int errsv = errno;
                g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errsv),
                             _ ("Could not create %s: %s"), dir, g_strerror (errsv));
                return FALSE;
        }
        return g_file_set_contents_full (
                path, text, -1, G_FILE_SET_CONTENTS_CONSISTENT | G_FILE_SET_CONTENTS_ONLY_EXISTING,
                0600, error);
}

gboolean
corral_task_record_save (const CorralTaskRecord *record, GError **error)
{
        G_GNUC_UNUSED g_autoptr (GMutexLocker) locker = g_mutex_locker_new (&record_lock);
        g_autoptr (CorralTaskRecord) old = NULL;
        CorralTaskRecord copy;

        g_return_val_if_fail (record != NULL && record->config != NULL, FALSE);
        if (!corral_domain_name_is_valid (record->vm_name)) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                             _ ("“%s” is not a workspace name"), record->vm_name);
                return FALSE;
        }
        copy = *record;
        if ((!copy.session_id || !copy.title) && (old = load_locked (record->vm_name, NULL))) {
                if (!copy.session_id)
                        copy.session_id = old->session_id;
                if (!copy.title)
                        copy.title = old->title;
        }
        return write_locked (&copy, error);
}

gboolean
corral_task_record_set_session (const char *vm_name, const char *session_id, GError **error)
{
        G_GNUC_UNUSED g_autoptr (GMutexLocker) locker = g_mutex_locker_new (&record_lock);
        g_autoptr (CorralTaskRecord) record = NULL;

        g_return_val_if_fail (vm_name != NULL && session_id != NULL, FALSE);
        if (!corral_assistant_store_id_is_valid (session_id)) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                             _ ("“%s” is not a session id"), session_id);
                return FALSE;
        }
        if (!(record = load_locked (vm_name, error)))
                return FALSE;
        g_free (record->session_id);
        record->session_id = g_strdup (session_id);
        return write_locked (record, error);
}

gboolean
corral_task_record_set_title (const char *vm_name,
                              const char *title,
                              gboolean only_if_untitled,
                              GError **error)
{
        G_GNUC_UNUSED g_autoptr (GMutexLocker) locker = g_mutex_locker_new (&record_lock);
        g_autoptr (CorralTaskRecord) record = NULL;

        g_return_val_if_fail (vm_name != NULL, FALSE);
        if (!(record = load_locked (vm_name, error)))
                return FALSE;
        if (only_if_untitled && record->title)
                return TRUE;
        g_free (record->title);
        record->title = corral_task_record_make_title (title);
        return write_locked (record, error);
}

gboolean
corral_task_record_remove (const char *vm_name, GError **error)
{
        G_GNUC_UNUSED g_autoptr (GMutexLocker) locker = g_mutex_locker_new (&record_lock);
        g_autofree char *path = NULL;

        if (!corral_domain_name_is_valid (vm_name)) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                             _ ("“%s” is not a workspace name"), vm_name);
                return FALSE;
        }
        path = record_path (vm_name);
        if (g_unlink (path) < 0 && errno != ENOENT) {
                int errsv = errno;
                g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errsv),
                             _ ("Could not remove %s: %s"), path, g_strerror (errsv));
                return FALSE;
        }
        return TRUE;
}

static gint
newest_first (gconstpointer a, gconstpointer b)
{
        const CorralTaskRecord *ra = *(CorralTaskRecord *const *) a;
        const CorralTaskRecord *rb = *(CorralTaskRecord *const *) b;

        if (ra->created != rb->created)
                return ra->created < rb->created ? 1 : -1;
        return g_strcmp0 (rb->vm_name, ra->vm_name);
}

GPtrArray *
corral_task_record_list (void)
{
        G_GNUC_UNUSED g_autoptr (GMutexLocker) locker = g_mutex_locker_new (&record_lock);
        g_autofree char *path = corral_task_record_dir ();
        g_autoptr (GDir) dir = g_dir_open (path, 0, NULL);
        GPtrArray *out = g_ptr_array_new_with_free_func ((GDestroyNotify) corral_task_record_free);
        const char *name;

        while (dir && (name = g_dir_read_name (dir))) {
                g_autofree char *vm_name = NULL;
                g_autoptr (GError) error = NULL;
                CorralTaskRecord *record;

                if (!g_str_has_suffix (name, ".json"))
                        continue; /* the atomic writer's temporary files, and anything else */
                vm_name = g_strndup (name, strlen (name) - strlen (".json"));
                if (!corral_domain_name_is_valid (vm_name))
                        continue;
                if ((record = load_locked (vm_name, &error)))
                        g_ptr_array_add (out, record);
                else
                        g_message ("Skipping the record of %s: %s", vm_name, error->message);
        }
        g_ptr_array_sort (out, newest_first);
        return out;
}
