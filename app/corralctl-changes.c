/* corralctl-changes.c — `corralctl changes|diff|undo|keep VM` (see the header).
 *
 * Reads STATE/kept/VM/changes.jsonl, which outlives the VM: a removed VM's changes can still be
 * listed, compared and undone (the journal names each share's folder). Only the person undoes:
 * the assistant's tools offer none of this.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corralctl-changes.h"

#include <glib/gi18n.h>
#include <stdio.h>
#include <string.h>

#include "corral-cjson.h"
#include "corral-shares.h"
#include "corral-task-changes.h"
#include "assistant-text.h"
#include "corralctl-share.h"
#include "corralctl-opts.h"

typedef struct {
        char *vm_dir;
        GPtrArray *changes; /* FsJournalChange */
        GHashTable *folders; /* share name -> its folder on this computer (from the journal) */
        gboolean complete; /* FALSE: the journal filled up; later changes are not in it */
} Task;

static void
task_clear (Task *t)
{
        g_free (t->vm_dir);
        g_clear_pointer (&t->changes, g_ptr_array_unref);
        g_clear_pointer (&t->folders, g_hash_table_unref);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Task, task_clear)

/* list: read the journal's changes (diff and undo read them themselves) */
static gboolean
task_open (Task *t, const char *vm, gboolean list, GError **error)
{
        g_autofree char *kept = NULL;

        if (!(t->vm_dir = corralctl_vm_dir (vm, error)))
                return FALSE;
        kept = corral_shares_kept_dir (t->vm_dir);
        if (!g_file_test (t->vm_dir, G_FILE_TEST_IS_DIR) &&
            !g_file_test (kept, G_FILE_TEST_IS_DIR)) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                             _ ("There is no VM named “%s” (see “corralctl vm ls”)"), vm);
                return FALSE;
        }
        if (!list)
                return TRUE;
        t->changes = corral_shares_changes (t->vm_dir, &t->folders, &t->complete, error);
        return t->changes != NULL;
}

/* The file's size now, or -1 when it is not there or its share is not known. Looked up beneath
 * the share's folder as the app does: a folder the guest turned into a link is not followed. */
static gint64
size_now (const Task *t, const FsJournalChange *c)
{
        const char *folder = g_hash_table_lookup (t->folders, c->share);

        if (!folder || c->kind == FS_JOURNAL_DELETED || c->type == 'd' || c->type == 'l')
                return -1;
        return corral_task_changes_size_beneath (folder, c->path);
}

/* SHARE/PATH as the person reads it: the names are the guest's, shown on one line with their
 * control characters escaped, so that none can move the terminal's cursor or fake a line. */
static char *
shown (const char *share, const char *path)
{
        g_autofree char *raw = g_build_filename (share, path, NULL);

        return assistant_text_escaped (raw, G_MAXSIZE);
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
        cJSON_AddBoolToObject (o, "time_changed", c->time_changed);
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
        g_autofree char *name = shown (c->share, c->path);
        g_autofree char *before = g_format_size_full (c->size, G_FORMAT_SIZE_LONG_FORMAT);
        gint64 now = size_now (t, c);
        GString *what = g_string_new (NULL);

        if (c->type == 'd')
                g_string_append (what, "/");
        if (c->origin) {
                g_autofree char *from = shown (c->share, c->origin);
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
        if (c->time_changed)
                g_string_append (what, _ ("  only its date changed"));
        g_print ("%-9s %s%s\n", fs_journal_change_kind_name (c->kind), name, what->str);
        g_string_free (what, TRUE);
}

static int
report (GError *error)
{
        g_printerr ("corralctl: %s\n", error->message);
        return CORRALCTL_EXIT_USAGE;
}

/* "Originals kept for undo: 12 kB of 2.1 GB" (only what is used once the VM is gone). */
static void
print_kept_space (const Task *t)
{
        g_autoptr (GError) error = NULL;
        guint64 used = 0, space = 0;
        g_autofree char *used_text = NULL, *space_text = NULL;

        if (!corral_shares_kept_space (t->vm_dir, &used, &space, &error)) {
                g_printerr ("corralctl: %s\n", error->message);
                return;
        }
        used_text = g_format_size (used);
        if (space == 0) {
                g_print (_ ("Originals kept for undo: %s.\n"), used_text);
                return;
        }
        space_text = g_format_size (space);
        /* Translators: sizes, "12 kB of 2.1 GB" */
        g_print (_ ("Originals kept for undo: %s of %s.\n"), used_text, space_text);
}

static int
cmd_changes (const Task *t, const char *vm, gboolean json)
{
        GPtrArray *changes = t->changes;

        if (json) {
                g_autoptr (cJSON) list = cJSON_CreateArray ();
                g_autofree char *text = NULL;

                for (guint i = 0; i < changes->len; i++)
                        cJSON_AddItemToArray (list, change_json (t, changes->pdata[i]));
                text = cJSON_Print (list);
                g_print ("%s\n", text);
                if (!t->complete)
                        g_printerr (_ ("corralctl: the list of changes filled up: later changes "
                                       "are not in it\n"));
                return 0;
        }
        if (changes->len == 0 && t->complete) {
                g_print (_ ("No changes in %s’s shared folders.\n"), vm);
                print_kept_space (t);
                return 0;
        }
        for (guint i = 0; i < changes->len; i++)
                print_change (t, changes->pdata[i]);
        if (!t->complete)
                g_print (_ ("The list of changes filled up: what the assistant changed after that "
                            "is not listed and cannot be undone. Keep or undo these changes to "
                            "start a new list.\n"));
        print_kept_space (t);
        return 0;
}

/* A size in bytes, or "nothing" for a side that is not there. */
static char *
bytes_text (gint64 size)
{
        g_autofree char *n = g_strdup_printf ("%" G_GINT64_FORMAT, size);

        /* Translators: %s is a number of bytes */
        return size < 0 ? g_strdup (_ ("nothing")) : g_strdup_printf (_ ("%s bytes"), n);
}

/* One change as `diff -u` shows it (corral_task_change_diff(): the original against the file
 * now, opened beneath its share's folder without following a link); what is not text is
 * said in words. */
static void
diff_one (const CorralTaskChange *c)
{
        g_autofree char *name = shown (c->share, c->path);
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralTaskDiff) d = corral_task_change_diff (c, &error);
        g_autofree char *before = NULL, *after = NULL;

        if (!d) {
                g_print (_ ("%s: %s\n"), name, error->message);
                return;
        }
        before = bytes_text (d->size_before);
        after = bytes_text (d->size_after);
        switch (d->kind) {
        case CORRAL_TASK_DIFF_TEXT: {
                /* The labels hold the guest's names: escaped like every name shown. */
                g_auto (GStrv) lines = g_strsplit (d->unified, "\n", 3);
                for (guint i = 0; lines[i]; i++) {
                        g_autofree char *line =
                                i < 2 && lines[i + 1] ? assistant_text_escaped (lines[i], G_MAXSIZE)
                                                      : g_strdup (lines[i]);
                        g_print ("%s%s", line, lines[i + 1] ? "\n" : "");
                }
                break;
        }
        case CORRAL_TASK_DIFF_IMAGE:
                g_print (_ ("%s: image changed, %s → %s\n"), name, before, after);
                break;
        case CORRAL_TASK_DIFF_BINARY:
                g_print (_ ("%s: changed, %s → %s\n"), name, before, after);
                break;
        case CORRAL_TASK_DIFF_TOO_LARGE:
                g_print (_ ("%s: too large to compare here, %s → %s\n"), name, before, after);
                break;
        case CORRAL_TASK_DIFF_UNAVAILABLE:
                g_print (_ ("%s: %s\n"), name, d->reason);
                break;
        case CORRAL_TASK_DIFF_NONE:
                break;
        }
}

static int
cmd_diff (const Task *t, char **which)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralTaskChanges) changes = corral_task_changes_load (t->vm_dir, &error);

        if (!changes)
                return report (error);
        for (guint i = 0; which && which[i]; i++) {
                gboolean found = FALSE;
                for (guint k = 0; k < changes->changes->len && !found; k++)
                        found = g_str_equal (
                                ((const CorralTaskChange *) changes->changes->pdata[k])->key,
                                which[i]);
                if (!found) {
                        g_printerr (_ ("corralctl: “%s” is not among the changes (see "
                                       "“corralctl changes”)\n"),
                                    which[i]);
                        return CORRALCTL_EXIT_USAGE;
                }
        }
        for (guint i = 0; i < changes->changes->len; i++) {
                const CorralTaskChange *c = changes->changes->pdata[i];

                if (!which || !which[0] || g_strv_contains ((const char *const *) which, c->key))
                        diff_one (c);
        }
        return 0;
}

static int
cmd_undo (const Task *t, char **which, gboolean all, gboolean force)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (GPtrArray) outcomes = NULL;
        guint failed = 0, changed = 0;

        if (all == (which && which[0]))
                return corralctl_usage_error ("undo", _ ("VM SHARE/PATH... or VM --all"));
        outcomes = corral_shares_undo (t->vm_dir, all ? NULL : (const char *const *) which, force,
                                       &error);
        if (!outcomes)
                return report (error);
        for (guint i = 0; i < outcomes->len; i++) {
                const FsUndoOutcome *o = outcomes->pdata[i];
                g_autofree char *name = shown (o->share, o->path);
                g_autofree char *problem =
                        o->problem ? assistant_text_escaped (o->problem, G_MAXSIZE) : NULL;

                if (!o->problem) {
                        g_print (_ ("undone    %s\n"), name);
                        continue;
                }
                failed++;
                changed += o->changed_since;
                g_print (_ ("not undone %s: %s\n"), name, problem);
        }
        if (outcomes->len == 0)
                g_print (_ ("There was nothing to undo.\n"));
        if (changed)
                g_print (_ ("Files changed on this computer since the assistant changed them are "
                            "left as they are; “--force” undoes them too (what was done to them "
                            "on this computer is lost).\n"));
        return failed ? 1 : 0;
}

static int
cmd_keep (const Task *t)
{
        g_autoptr (GError) error = NULL;
        guint n = t->changes->len;

        if (!corral_shares_keep_all (t->vm_dir, &error))
                return report (error);
        g_print (g_dngettext (GETTEXT_PACKAGE, "Kept %u change; its original is no longer kept.\n",
                              "Kept %u changes; their originals are no longer kept.\n", n),
                 n);
        return 0;
}

/* --kept-space: for a VM that exists, running or not (SECURITY.md F21). */
static int
cmd_set_kept_space (const char *vm, const char *text)
{
        g_autoptr (GError) error = NULL;
        g_autofree char *vm_dir = corralctl_vm_dir (vm, &error);
        guint64 mib = 0;

        if (!vm_dir)
                return report (error);
        if (!g_ascii_string_to_unsigned (text, 10, 0, FS_KEPT_SPACE_MAX_MIB, &mib, NULL) ||
            (mib != 0 && mib < FS_KEPT_SPACE_MIN_MIB)) {
                g_printerr (_ ("corralctl: --kept-space takes a number of megabytes from %u to "
                               "%u, or 0 for the default\n"),
                            FS_KEPT_SPACE_MIN_MIB, FS_KEPT_SPACE_MAX_MIB);
                return CORRALCTL_EXIT_USAGE;
        }
        if (!g_file_test (vm_dir, G_FILE_TEST_IS_DIR)) {
                g_printerr (_ ("corralctl: There is no VM named “%s” (see “corralctl vm ls”)\n"),
                            vm);
                return CORRALCTL_EXIT_USAGE;
        }
        if (!corral_shares_set_kept_space (vm_dir, (guint) mib, &error))
                return report (error);
        {
                g_autofree char *size =
                        g_format_size ((mib ? mib : FS_KEPT_SPACE_DEFAULT_MIB) << 20);
                g_print (_ ("The originals kept for undo in %s may now take up to %s.\n"), vm,
                         size);
        }
        return 0;
}

int
corralctl_changes_main (int argc, char **argv)
{
        gboolean json = FALSE, all = FALSE, force = FALSE;
        g_autofree char *kept_space = NULL;
        const GOptionEntry changes_entries[] = {
                { "json", 0, 0, G_OPTION_ARG_NONE, &json, N_ ("Print the changes as JSON"), NULL },
                { "kept-space", 0, 0, G_OPTION_ARG_STRING, &kept_space,
                  N_ ("Let the originals kept for undo take up to MIB megabytes (0: the default)"),
                  N_ ("MIB") },
                G_OPTION_ENTRY_NULL
        };
        const GOptionEntry undo_entries[] = {
                { "all", 0, 0, G_OPTION_ARG_NONE, &all, N_ ("Undo every change"), NULL },
                { "force", 0, 0, G_OPTION_ARG_NONE, &force,
                  N_ ("Also undo files changed on this computer since the assistant changed them"),
                  NULL },
                G_OPTION_ENTRY_NULL
        };
        const char *cmd = argv[0];
        const char *parameter = g_str_equal (cmd, "changes") || g_str_equal (cmd, "keep") ? "VM"
                                : g_str_equal (cmd, "diff") ? _ ("VM [SHARE/PATH...]")
                                                            : _ ("VM SHARE/PATH... | VM --all");
        const char *summary =
                g_str_equal (cmd, "changes")
                        ? _ ("List what the assistant changed in a VM’s shared folders, with the "
                             "originals kept for undo")
                : g_str_equal (cmd, "diff")
                        ? _ ("Show what the assistant changed in files, as a unified diff")
                : g_str_equal (cmd, "undo")
                        ? _ ("Put files back as they were before the assistant changed them")
                        : _ ("Keep every change the assistant made and remove the originals");
        g_autoptr (GError) error = NULL;
        g_auto (Task) task = { 0 };

        if (!corralctl_options_parse (cmd, parameter, summary,
                                      g_str_equal (cmd, "changes") ? changes_entries
                                      : g_str_equal (cmd, "undo")  ? undo_entries
                                                                   : NULL,
                                      &argc, &argv))
                return CORRALCTL_EXIT_USAGE;
        if (argc < 2 || (argc != 2 && (g_str_equal (cmd, "changes") || g_str_equal (cmd, "keep"))))
                return corralctl_usage_error (cmd, parameter);
        if (kept_space)
                return cmd_set_kept_space (argv[1], kept_space);
        if (!task_open (&task, argv[1], g_str_equal (cmd, "changes") || g_str_equal (cmd, "keep"),
                        &error))
                return report (error);
        if (g_str_equal (cmd, "changes"))
                return cmd_changes (&task, argv[1], json);
        if (g_str_equal (cmd, "diff"))
                return cmd_diff (&task, argv + 2);
        if (g_str_equal (cmd, "undo"))
                return cmd_undo (&task, argv + 2, all, force);
        return cmd_keep (&task);
}
