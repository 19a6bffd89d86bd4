/* corralctl-changes.c — `corralctl changes VM [--json]` (see the header).
 *
 * Reads STATE/kept/VM/changes.jsonl, which outlives the VM: the changes of a removed VM are
 * still listed (its shares' folders are then unknown, and sizes now are left out).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corralctl-changes.h"

#include <glib/gi18n.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "corral-cjson.h"
#include "corral-shares.h"
#include "corral-vm-host.h"
#include "corralctl-opts.h"

typedef struct {
        char *vm_dir;
        GHashTable *folders; /* share name -> folder on this computer (when the VM is there) */
} Task;

static void
task_clear (Task *t)
{
        g_free (t->vm_dir);
        g_clear_pointer (&t->folders, g_hash_table_unref);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Task, task_clear)

static gboolean
task_open (Task *t, const char *vm, GError **error)
{
        g_autoptr (CorralHostSelection) sel = corral_host_select_default (error);
        g_autofree char *kept = NULL;

        if (!sel)
                return FALSE;
        if (!*vm || strchr (vm, '/') || g_str_equal (vm, ".") || g_str_equal (vm, "..")) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                             _ ("“%s” is not a VM name"), vm);
                return FALSE;
        }
        t->vm_dir = g_build_filename (sel->state_dir, "vms", vm, NULL);
        kept = corral_shares_kept_dir (t->vm_dir);
        t->folders = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
        if (g_file_test (t->vm_dir, G_FILE_TEST_IS_DIR)) {
                g_autoptr (GPtrArray) shares = corral_shares_list (t->vm_dir, error);

                if (!shares)
                        return FALSE;
                for (guint i = 0; i < shares->len; i++) {
                        const CorralShare *s = shares->pdata[i];
                        g_hash_table_insert (t->folders, g_strdup (s->name), g_strdup (s->path));
                }
        } else if (!g_file_test (kept, G_FILE_TEST_IS_DIR)) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                             _ ("There is no VM named “%s” (see “corralctl vm ls”)"), vm);
                return FALSE;
        }
        return TRUE;
}

/* The file's size now, or -1 when it is not there or its share is not known. */
static gint64
size_now (const Task *t, const FsJournalChange *c)
{
        const char *folder = g_hash_table_lookup (t->folders, c->share);
        g_autofree char *path = NULL;
        struct stat st;

        if (!folder || c->kind == FS_JOURNAL_DELETED)
                return -1;
        path = g_build_filename (folder, c->path, NULL);
        if (lstat (path, &st) < 0 || !S_ISREG (st.st_mode))
                return -1;
        return st.st_size;
}

static const char *
type_name (char type)
{
        return type == 'd' ? "folder" : type == 'l' ? "link" : "file";
}

static const char *
lost_reason (const char *lost)
{
        if (g_str_equal (lost, "budget"))
                return _ ("not kept: the task’s space for originals was full");
        if (g_str_equal (lost, "too-large"))
                return _ ("not kept: larger than the task’s space for originals");
        return _ ("not kept: it could not be read");
}

static cJSON *
change_json (const Task *t, const FsJournalChange *c)
{
        cJSON *o = cJSON_CreateObject ();
        const char *folder = g_hash_table_lookup (t->folders, c->share);
        gint64 now = size_now (t, c);

        cJSON_AddStringToObject (o, "change", fs_journal_change_kind_name (c->kind));
        cJSON_AddStringToObject (o, "share", c->share);
        cJSON_AddStringToObject (o, "path", c->path);
        if (c->origin)
                cJSON_AddStringToObject (o, "from", c->origin);
        cJSON_AddStringToObject (o, "type", type_name (c->type));
        if (folder)
                cJSON_AddStringToObject (o, "folder", folder);
        cJSON_AddBoolToObject (o, "content_changed", c->content_changed);
        cJSON_AddBoolToObject (o, "mode_changed", c->mode_changed);
        if (c->copy || c->kind == FS_JOURNAL_DELETED || c->lost)
                cJSON_AddNumberToObject (o, "size_before", (double) c->size);
        if (now >= 0)
                cJSON_AddNumberToObject (o, "size_now", (double) now);
        if (c->has_mode)
                cJSON_AddNumberToObject (o, "mode_before", c->mode);
        cJSON_AddBoolToObject (o, "original_kept", c->copy != NULL);
        if (c->lost)
                cJSON_AddStringToObject (o, "not_kept_because", c->lost);
        return o;
}

static void
print_change (const Task *t, const FsJournalChange *c)
{
        g_autofree char *name = g_build_filename (c->share, c->path, NULL);
        g_autofree char *before = g_format_size_full (c->size, G_FORMAT_SIZE_LONG_FORMAT);
        gint64 now = size_now (t, c);
        GString *what = g_string_new (NULL);

        if (c->type == 'd')
                g_string_append (what, "/");
        if (c->origin) {
                g_autofree char *from = g_build_filename (c->share, c->origin, NULL);
                g_string_append_printf (what, _ ("  (was %s)"), from);
        }
        if (c->lost) {
                g_string_append_printf (what, "  %s", lost_reason (c->lost));
        } else if (c->kind == FS_JOURNAL_DELETED && c->type == 'f') {
                g_string_append_printf (what, _ ("  %s, kept"), before);
        } else if (c->content_changed && c->type == 'f') {
                g_autofree char *after =
                        now >= 0 ? g_format_size_full ((guint64) now, G_FORMAT_SIZE_LONG_FORMAT)
                                 : g_strdup ("?");
                g_string_append_printf (what, _ ("  %s → %s"), before, after);
        }
        if (c->mode_changed)
                g_string_append_printf (what, _ ("  permissions were %04o"), c->mode);
        g_print ("%-9s %s%s\n", fs_journal_change_kind_name (c->kind), name, what->str);
        g_string_free (what, TRUE);
}

int
corralctl_changes_main (int argc, char **argv)
{
        gboolean json = FALSE;
        const GOptionEntry entries[] = { { "json", 0, 0, G_OPTION_ARG_NONE, &json,
                                           N_ ("Print the changes as JSON"), NULL },
                                         G_OPTION_ENTRY_NULL };
        g_autoptr (GError) error = NULL;
        g_autoptr (GPtrArray) changes = NULL;
        g_auto (Task) task = { 0 };

        if (!corralctl_options_parse ("changes", "VM",
                                      _ ("List what the assistant changed in a VM’s shared "
                                         "folders, with the originals kept for undo"),
                                      entries, &argc, &argv))
                return CORRALCTL_EXIT_USAGE;
        if (argc != 2)
                return corralctl_usage_error ("changes", "VM");
        if (!task_open (&task, argv[1], &error) ||
            !(changes = corral_shares_changes (task.vm_dir, &error))) {
                g_printerr ("corralctl: %s\n", error->message);
                return CORRALCTL_EXIT_USAGE;
        }
        if (json) {
                g_autoptr (cJSON) list = cJSON_CreateArray ();
                g_autofree char *text = NULL;

                for (guint i = 0; i < changes->len; i++)
                        cJSON_AddItemToArray (list, change_json (&task, changes->pdata[i]));
                text = cJSON_Print (list);
                g_print ("%s\n", text);
                return 0;
        }
        if (changes->len == 0) {
                g_print (_ ("No changes in %s’s shared folders.\n"), argv[1]);
                return 0;
        }
        for (guint i = 0; i < changes->len; i++)
                print_change (&task, changes->pdata[i]);
        return 0;
}
