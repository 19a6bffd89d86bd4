/* test-agent-files.c — file methods and watches through the real corral-agent.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "test-util.h"

#include <glib/gstdio.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
        TestAgent *agent;
        CorralAgentClient *client;
        char *dir;
} Fixture;

static void
fixture_setup (Fixture *fx, gconstpointer data)
{
        g_autoptr (GError) error = NULL;

        fx->agent = test_agent_start (0, NULL);
        fx->client = fx->agent->client;
        fx->dir = g_dir_make_tmp ("corral-files-XXXXXX", &error);
        g_assert_no_error (error);
}

static void
fixture_teardown (Fixture *fx, gconstpointer data)
{
        g_autofree char *quoted = g_shell_quote (fx->dir);
        g_autofree char *cmd = g_strdup_printf ("rm -rf %s", quoted);

        g_clear_pointer (&fx->agent, test_agent_free);
        g_assert_true (g_spawn_command_line_sync (cmd, NULL, NULL, NULL, NULL));
        g_free (fx->dir);
}

static char *
path (Fixture *fx, const char *name)
{
        return g_build_filename (fx->dir, name, NULL);
}

static GBytes *
random_bytes (gsize size)
{
        guint8 *buf = g_malloc (size);

        for (gsize i = 0; i < size; i++)
                buf[i] = (guint8) g_test_rand_int_range (0, 256);
        return g_bytes_new_take (buf, size);
}

static gboolean
write_file (Fixture *fx,
            const char *p,
            GBytes *contents,
            CorralWriteMode mode,
            guint perm,
            GError **error)
{
        g_autoptr (GAsyncResult) result = NULL;
        GAsyncResult *slot = NULL;

        corral_agent_client_write_file_async (fx->client, p, contents, mode, perm, NULL,
                                              test_store_result, &slot);
        result = test_wait_result (&slot);
        return corral_agent_client_write_file_finish (fx->client, result, error);
}

static GBytes *
read_file (Fixture *fx, const char *p, guint64 offset, gint64 length, gsize max, GError **error)
{
        g_autoptr (GAsyncResult) result = NULL;
        GAsyncResult *slot = NULL;

        corral_agent_client_read_file_async (fx->client, p, offset, length, max, NULL,
                                             test_store_result, &slot);
        result = test_wait_result (&slot);
        return corral_agent_client_read_file_finish (fx->client, result, error);
}

static CorralFileStat *
stat_path (Fixture *fx, const char *p, gboolean follow, GError **error)
{
        g_autoptr (GAsyncResult) result = NULL;
        GAsyncResult *slot = NULL;

        corral_agent_client_stat_async (fx->client, p, follow, NULL, test_store_result, &slot);
        result = test_wait_result (&slot);
        return corral_agent_client_stat_finish (fx->client, result, error);
}

/* For mkdir, move, remove: slot filled by the caller's *_async. */
static gboolean
op_wait (Fixture *fx, GAsyncResult **slot, GError **error)
{
        g_autoptr (GAsyncResult) result = test_wait_result (slot);

        return corral_agent_client_op_finish (fx->client, result, error);
}

static void
test_write_read (Fixture *fx, gconstpointer data)
{
        g_autofree char *p = path (fx, "blob");
        g_autoptr (GBytes) contents = random_bytes (3 * 1024 * 1024 + 5);
        g_autoptr (GBytes) back = NULL;
        g_autoptr (GBytes) part = NULL;
        g_autoptr (GError) error = NULL;
        g_autofree char *local = NULL;
        gsize local_len;

        g_assert_true (write_file (fx, p, contents, CORRAL_WRITE_REPLACE, 0600, &error));
        g_assert_no_error (error);
        g_assert_true (g_file_get_contents (p, &local, &local_len, NULL));
        g_assert_cmpmem (local, local_len, g_bytes_get_data (contents, NULL),
                         g_bytes_get_size (contents));

        back = read_file (fx, p, 0, -1, 0, &error);
        g_assert_no_error (error);
        g_assert_true (g_bytes_equal (back, contents));

        part = read_file (fx, p, 1000, 5000, 0, &error);
        g_assert_no_error (error);
        g_assert_cmpmem (g_bytes_get_data (part, NULL), g_bytes_get_size (part),
                         (const guint8 *) g_bytes_get_data (contents, NULL) + 1000, 5000);
}

static void
test_empty_and_append (Fixture *fx, gconstpointer data)
{
        g_autofree char *p = path (fx, "log");
        g_autoptr (GBytes) empty = g_bytes_new_static ("", 0);
        g_autoptr (GBytes) one = g_bytes_new_static ("one\n", 4);
        g_autoptr (GBytes) two = g_bytes_new_static ("two\n", 4);
        g_autoptr (GBytes) back = NULL;
        g_autoptr (GError) error = NULL;

        g_assert_true (write_file (fx, p, empty, CORRAL_WRITE_REPLACE, 0, &error));
        back = read_file (fx, p, 0, -1, 0, &error);
        g_assert_no_error (error);
        g_assert_cmpuint (g_bytes_get_size (back), ==, 0);
        g_clear_pointer (&back, g_bytes_unref);

        g_assert_true (write_file (fx, p, one, CORRAL_WRITE_APPEND, 0, &error));
        g_assert_true (write_file (fx, p, two, CORRAL_WRITE_APPEND, 0, &error));
        g_assert_no_error (error);
        back = read_file (fx, p, 0, -1, 0, &error);
        g_assert_cmpmem (g_bytes_get_data (back, NULL), g_bytes_get_size (back), "one\ntwo\n", 8);
}

static void
test_read_limit (Fixture *fx, gconstpointer data)
{
        g_autofree char *p = path (fx, "big");
        g_autoptr (GBytes) contents = random_bytes (10000);
        g_autoptr (GBytes) back = NULL;
        g_autoptr (GError) error = NULL;

        g_assert_true (g_file_set_contents (p, g_bytes_get_data (contents, NULL), 10000, NULL));
        back = read_file (fx, p, 0, -1, 9999, &error);
        g_assert_null (back);
        g_assert_error (error, CORRAL_AGENT_ERROR, CORRAL_AGENT_ERROR_TOO_LARGE);
        g_clear_error (&error);
        back = read_file (fx, p, 0, -1, 10000, &error);
        g_assert_no_error (error);
        g_assert_true (g_bytes_equal (back, contents));
        /* The connection is still fine after the refused read. */
        g_assert_true (corral_agent_client_get_connected (fx->client));
}

static void
test_read_missing (Fixture *fx, gconstpointer data)
{
        g_autofree char *p = path (fx, "missing");
        g_autoptr (GBytes) back = NULL;
        g_autoptr (GError) error = NULL;

        back = read_file (fx, p, 0, -1, 0, &error);
        g_assert_null (back);
        g_assert_error (error, CORRAL_AGENT_ERROR, CORRAL_AGENT_ERROR_NOT_FOUND);
}

static void
test_stat (Fixture *fx, gconstpointer data)
{
        g_autofree char *file = path (fx, "f");
        g_autofree char *link = path (fx, "l");
        g_autoptr (CorralFileStat) st = NULL;
        g_autoptr (GError) error = NULL;

        g_assert_true (g_file_set_contents (file, "12345", 5, NULL));
        g_assert_cmpint (g_chmod (file, 0640), ==, 0);
        g_assert_cmpint (symlink ("f", link), ==, 0);

        st = stat_path (fx, file, FALSE, &error);
        g_assert_no_error (error);
        g_assert_cmpint (st->type, ==, CORRAL_FILE_TYPE_FILE);
        g_assert_cmpuint (st->size, ==, 5);
        g_assert_cmpuint (st->mode & 07777, ==, 0640);
        g_assert_cmpuint (st->uid, ==, getuid ());
        g_assert_cmpint (st->mtime_ns / 1000000000, >, 1600000000);
        g_clear_pointer (&st, corral_file_stat_free);

        st = stat_path (fx, link, FALSE, &error);
        g_assert_no_error (error);
        g_assert_cmpint (st->type, ==, CORRAL_FILE_TYPE_SYMLINK);
        g_assert_cmpstr (st->target, ==, "f");
        g_clear_pointer (&st, corral_file_stat_free);

        st = stat_path (fx, link, TRUE, &error);
        g_assert_no_error (error);
        g_assert_cmpint (st->type, ==, CORRAL_FILE_TYPE_FILE);
        g_clear_pointer (&st, corral_file_stat_free);

        st = stat_path (fx, fx->dir, FALSE, &error);
        g_assert_cmpint (st->type, ==, CORRAL_FILE_TYPE_DIR);
        g_clear_pointer (&st, corral_file_stat_free);

        g_free (file);
        file = path (fx, "nope");
        st = stat_path (fx, file, FALSE, &error);
        g_assert_null (st);
        g_assert_error (error, CORRAL_AGENT_ERROR, CORRAL_AGENT_ERROR_NOT_FOUND);
}

static int
entry_cmp (gconstpointer a, gconstpointer b)
{
        const CorralFileEntry *ea = *(CorralFileEntry *const *) a;
        const CorralFileEntry *eb = *(CorralFileEntry *const *) b;

        return strcmp (ea->name, eb->name);
}

static void
test_mkdir_list_move_remove (Fixture *fx, gconstpointer data)
{
        g_autofree char *deep = path (fx, "a/b/c");
        g_autofree char *a = path (fx, "a");
        g_autofree char *x = path (fx, "a/x");
        g_autofree char *y = path (fx, "a/y");
        g_autoptr (GAsyncResult) result = NULL;
        g_autoptr (GPtrArray) entries = NULL;
        g_autoptr (GError) error = NULL;
        GAsyncResult *slot = NULL;
        gboolean truncated = TRUE;
        CorralFileEntry *e;

        corral_agent_client_mkdir_async (fx->client, deep, FALSE, 0, NULL, test_store_result,
                                         &slot);
        g_assert_false (op_wait (fx, &slot, &error));
        g_assert_error (error, CORRAL_AGENT_ERROR, CORRAL_AGENT_ERROR_NOT_FOUND);
        g_clear_error (&error);
        corral_agent_client_mkdir_async (fx->client, deep, TRUE, 0700, NULL, test_store_result,
                                         &slot);
        g_assert_true (op_wait (fx, &slot, &error));
        g_assert_true (g_file_test (deep, G_FILE_TEST_IS_DIR));
        g_assert_true (g_file_set_contents (x, "xx", 2, NULL));
        g_assert_true (g_file_set_contents (y, "yyy", 3, NULL));

        corral_agent_client_list_async (fx->client, a, NULL, test_store_result, &slot);
        result = test_wait_result (&slot);
        entries = corral_agent_client_list_finish (fx->client, result, &truncated, &error);
        g_assert_no_error (error);
        g_assert_false (truncated);
        g_assert_cmpuint (entries->len, ==, 3);
        g_ptr_array_sort (entries, entry_cmp);
        e = entries->pdata[0];
        g_assert_cmpstr (e->name, ==, "b");
        g_assert_cmpint (e->type, ==, CORRAL_FILE_TYPE_DIR);
        e = entries->pdata[2];
        g_assert_cmpstr (e->name, ==, "y");
        g_assert_cmpint (e->type, ==, CORRAL_FILE_TYPE_FILE);
        g_assert_cmpuint (e->size, ==, 3);

        /* No silent overwrite. */
        corral_agent_client_move_async (fx->client, x, y, FALSE, NULL, test_store_result, &slot);
        g_assert_false (op_wait (fx, &slot, &error));
        g_assert_error (error, CORRAL_AGENT_ERROR, CORRAL_AGENT_ERROR_EXISTS);
        g_clear_error (&error);
        corral_agent_client_move_async (fx->client, x, y, TRUE, NULL, test_store_result, &slot);
        g_assert_true (op_wait (fx, &slot, &error));
        g_assert_false (g_file_test (x, G_FILE_TEST_EXISTS));

        corral_agent_client_remove_async (fx->client, a, FALSE, NULL, test_store_result, &slot);
        g_assert_false (op_wait (fx, &slot, &error));
        g_assert_nonnull (error);
        g_clear_error (&error);
        g_assert_true (g_file_test (a, G_FILE_TEST_IS_DIR));
        corral_agent_client_remove_async (fx->client, a, TRUE, NULL, test_store_result, &slot);
        g_assert_true (op_wait (fx, &slot, &error));
        g_assert_no_error (error);
        g_assert_false (g_file_test (a, G_FILE_TEST_EXISTS));
}

typedef struct {
        guint watch;
        GPtrArray *seen; /* "kind path" */
} WatchLog;

static void
on_watch_event (
        CorralAgentClient *client, guint watch, const char *p, const char *kind, WatchLog *log)
{
        if (watch == log->watch)
                g_ptr_array_add (log->seen, g_strdup_printf ("%s %s", kind, p));
}

static void
wait_event (WatchLog *log, const char *kind, const char *p)
{
        g_autofree char *want = g_strdup_printf ("%s %s", kind, p);
        gint64 deadline = g_get_monotonic_time () + 20 * G_USEC_PER_SEC;

        while (!g_ptr_array_find_with_equal_func (log->seen, want, g_str_equal, NULL)) {
                if (g_get_monotonic_time () > deadline)
                        g_error ("no watch event “%s”", want);
                g_main_context_iteration (NULL, TRUE);
        }
}

static void
append (const char *file, const char *text)
{
        FILE *f = fopen (file, "a");

        g_assert_nonnull (f);
        fputs (text, f);
        fclose (f);
}

static void
test_watch (Fixture *fx, gconstpointer data)
{
        g_autofree char *file = path (fx, "watched");
        g_autoptr (GAsyncResult) result = NULL;
        g_autoptr (GError) error = NULL;
        GAsyncResult *slot = NULL;
        WatchLog log = { 0, g_ptr_array_new_with_free_func (g_free) };
        gulong handler;

        handler = g_signal_connect (fx->client, "watch-event", G_CALLBACK (on_watch_event), &log);
        corral_agent_client_watch_start_async (fx->client, fx->dir, TRUE, NULL, test_store_result,
                                               &slot);
        result = test_wait_result (&slot);
        log.watch = corral_agent_client_watch_start_finish (fx->client, result, &error);
        g_assert_no_error (error);
        g_assert_cmpuint (log.watch, >, 0);

        append (file, "a"); /* not g_file_set_contents(): that creates and renames a temp file */
        wait_event (&log, "create", file);
        append (file, "more");
        wait_event (&log, "modify", file);
        g_assert_cmpint (g_unlink (file), ==, 0);
        wait_event (&log, "delete", file);

        g_clear_object (&result);
        corral_agent_client_watch_stop_async (fx->client, log.watch, NULL, test_store_result,
                                              &slot);
        g_assert_true (op_wait (fx, &slot, &error));
        g_assert_no_error (error);
        g_ptr_array_set_size (log.seen, 0);
        g_assert_true (g_file_set_contents (file, "b", 1, NULL));
        test_spin (300);
        g_assert_cmpuint (log.seen->len, ==, 0);

        g_signal_handler_disconnect (fx->client, handler);
        g_ptr_array_unref (log.seen);
}

int
main (int argc, char **argv)
{
        g_test_init (&argc, &argv, NULL);

#define ADD(p, fn) g_test_add (p, Fixture, NULL, fixture_setup, fn, fixture_teardown)
        ADD ("/agent-files/write-read", test_write_read);
        ADD ("/agent-files/empty-and-append", test_empty_and_append);
        ADD ("/agent-files/read-limit", test_read_limit);
        ADD ("/agent-files/read-missing", test_read_missing);
        ADD ("/agent-files/stat", test_stat);
        ADD ("/agent-files/mkdir-list-move-remove", test_mkdir_list_move_remove);
        ADD ("/agent-files/watch", test_watch);
#undef ADD

        return g_test_run ();
}
