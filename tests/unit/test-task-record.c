/* test-task-record.c — the task service's records (app/task/corral-task-record.c): a task's
 * title, made from what the person typed and kept across saves. No GTK, no VM.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

#include "assistant-store.h"
#include "corral-task-record.h"

static void
test_make_title (void)
{
        g_autofree char *long_text = NULL;
        g_autofree char *cut = NULL;
        g_autoptr (GString) accents = g_string_new (NULL);
        g_autofree char *accents_cut = NULL;
        struct {
                const char *in;
                const char *out;
        } cases[] = {
                { "Sort my notes", "Sort my notes" },
                { "  Sort\tmy\n\nnotes  ", "Sort my notes" },
                /* A bidi override and a terminal escape: gone, not shown. */
                { "Sort \u202Eseton\u202C \x1b[31mred", "Sort seton [31mred" },
                { "line\u2028break", "line break" },
                { " \n\t ", NULL },
                { "", NULL },
                { "\xff\xfe", NULL },
        };

        for (gsize i = 0; i < G_N_ELEMENTS (cases); i++) {
                g_autofree char *title = corral_task_record_make_title (cases[i].in);

                g_assert_cmpstr (title, ==, cases[i].out);
        }
        /* Cut to the limit, at a character, with an ellipsis. */
        long_text = g_strnfill (500, 'a');
        cut = corral_task_record_make_title (long_text);
        g_assert_cmpuint (strlen (cut), ==, CORRAL_TASK_RECORD_MAX_TITLE);
        g_assert_true (g_str_has_suffix (cut, "…"));
        for (int i = 0; i < 150; i++)
                g_string_append (accents, "é");
        accents_cut = corral_task_record_make_title (accents->str);
        g_assert_cmpuint (strlen (accents_cut), <=, CORRAL_TASK_RECORD_MAX_TITLE);
        g_assert_true (g_utf8_validate (accents_cut, -1, NULL));
        g_assert_true (g_str_has_suffix (accents_cut, "é…"));
}

static CorralTaskRecord *
new_record (const char *vm_name)
{
        CorralTaskRecord *record = g_new0 (CorralTaskRecord, 1);
        CorralTaskConfig config = { .folder = (char *) "/home/ada/Notes",
                                    .mode = FS_MODE_RW,
                                    .image = (char *) "minimal",
                                    .memory_mib = 1024,
                                    .vcpus = 2,
                                    .network_preset = (char *) "none" };

        record->vm_name = g_strdup (vm_name);
        record->config = corral_task_config_copy (&config);
        record->created = 1764584100;
        return record;
}

static void
test_title_kept (void)
{
        g_autofree char *state = g_dir_make_tmp ("task-record-XXXXXX", NULL);
        g_autoptr (CorralTaskRecord) record = new_record ("task-20261201-101500");
        g_autoptr (CorralTaskRecord) back = NULL;
        g_autoptr (GError) error = NULL;
        g_autofree char *cmd = NULL;

        g_setenv ("XDG_STATE_HOME", state, TRUE);
        g_assert_true (corral_task_record_save (record, &error));
        g_assert_no_error (error);
        /* The first request names the task; a later one does not. */
        g_assert_true (
                corral_task_record_set_title (record->vm_name, "Sort my\nnotes", TRUE, &error));
        g_assert_true (
                corral_task_record_set_title (record->vm_name, "Now the photos", TRUE, &error));
        back = corral_task_record_load (record->vm_name, &error);
        g_assert_no_error (error);
        g_assert_cmpstr (back->title, ==, "Sort my notes");
        g_clear_pointer (&back, corral_task_record_free);
        /* A save without a title (the start, the session id) keeps it. */
        g_assert_true (corral_task_record_save (record, &error));
        back = corral_task_record_load (record->vm_name, &error);
        g_assert_cmpstr (back->title, ==, "Sort my notes");
        g_clear_pointer (&back, corral_task_record_free);
        /* The person renames it; a blank name forgets it. */
        g_assert_true (corral_task_record_set_title (record->vm_name, "Notes", FALSE, &error));
        back = corral_task_record_load (record->vm_name, &error);
        g_assert_cmpstr (back->title, ==, "Notes");
        g_clear_pointer (&back, corral_task_record_free);
        g_assert_true (corral_task_record_set_title (record->vm_name, "  ", FALSE, &error));
        back = corral_task_record_load (record->vm_name, &error);
        g_assert_null (back->title);
        /* A task with no record cannot be named. */
        g_assert_false (corral_task_record_set_title ("task-19990101-000000", "x", FALSE, &error));
        g_assert_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND);
        cmd = g_strdup_printf ("rm -rf '%s'", state);
        g_assert_true (g_spawn_command_line_sync (cmd, NULL, NULL, NULL, NULL));
}

/* A title the file holds is checked as everything else read back. */
static void
test_title_read_back (void)
{
        const char *bad[] = { "\"two\\nlines\"", "\"\\u202egnp.exe\"", "\"   \"", "7" };

        for (gsize i = 0; i < G_N_ELEMENTS (bad); i++) {
                g_autofree char *json = g_strdup_printf (
                        "{\"version\":1,\"vm\":\"task-20261201-101500\",\"title\":%s,"
                        "\"created\":1,\"folder\":\"/home/ada\",\"mode\":\"ro\",\"image\":"
                        "\"minimal\",\"memory_mib\":1024,\"vcpus\":2,\"network_preset\":\"none\"}",
                        bad[i]);
                g_autoptr (GError) error = NULL;
                g_autoptr (CorralTaskRecord) record =
                        corral_task_record_from_json (json, strlen (json), &error);

                g_assert_null (record);
                g_assert_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA);
        }
}

/* Removing a task removes its conversation: the store's files only, never through a link. */
static void
test_conversation_removed (void)
{
        g_autofree char *state = g_dir_make_tmp ("task-record-XXXXXX", NULL);
        g_autofree char *root = NULL, *dir = NULL, *file = NULL, *outside = NULL, *link = NULL;
        g_autofree char *cmd = NULL;
        g_autoptr (GError) error = NULL;

        g_setenv ("XDG_STATE_HOME", state, TRUE);
        root = corral_assistant_store_root ();
        dir = g_build_filename (root, "s-1", NULL);
        g_assert_cmpint (g_mkdir_with_parents (dir, 0700), ==, 0);
        file = g_build_filename (dir, "transcript.jsonl", NULL);
        g_assert_true (g_file_set_contents (file, "{}\n", -1, NULL));
        g_free (file);
        file = g_build_filename (dir, "task-1.audit.jsonl", NULL);
        g_assert_true (g_file_set_contents (file, "{}\n", -1, NULL));
        g_assert_true (corral_assistant_store_remove ("s-1", &error));
        g_assert_no_error (error);
        g_assert_false (g_file_test (dir, G_FILE_TEST_EXISTS));
        /* Gone already: nothing to do. */
        g_assert_true (corral_assistant_store_remove ("s-1", &error));
        /* Not an id: never a path. */
        g_assert_false (corral_assistant_store_remove ("../s-1", &error));
        g_assert_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
        g_clear_error (&error);
        /* A link in the folder is not followed, and the folder stays. */
        g_assert_cmpint (g_mkdir_with_parents (dir, 0700), ==, 0);
        outside = g_build_filename (state, "precious.txt", NULL);
        g_assert_true (g_file_set_contents (outside, "keep", -1, NULL));
        link = g_build_filename (dir, "a-link", NULL);
        g_assert_cmpint (symlink (outside, link), ==, 0);
        g_assert_false (corral_assistant_store_remove ("s-1", &error));
        g_assert_error (error, G_IO_ERROR, G_IO_ERROR_NOT_REGULAR_FILE);
        g_assert_true (g_file_test (outside, G_FILE_TEST_IS_REGULAR));
        g_assert_true (g_file_test (link, G_FILE_TEST_IS_SYMLINK));
        cmd = g_strdup_printf ("rm -rf '%s'", state);
        g_assert_true (g_spawn_command_line_sync (cmd, NULL, NULL, NULL, NULL));
}

int
main (int argc, char **argv)
{
        g_test_init (&argc, &argv, NULL);
        g_test_add_func ("/task-record/make-title", test_make_title);
        g_test_add_func ("/task-record/title-kept", test_title_kept);
        g_test_add_func ("/task-record/title-read-back", test_title_read_back);
        g_test_add_func ("/task-record/conversation-removed", test_conversation_removed);
        return g_test_run ();
}
