/* test-mount-bounds.c — SECURITY-TESTS.md item 39 for the file server: what a guest can make
 * the host write through a share is bounded. The audit log rotates at its size and folds
 * repeated refusals into a count without losing one; changes are never folded; kept copies
 * stop at a quota and a free-space floor, and then the replace is refused (the old content is
 * never dropped instead).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "corral-audit-log.h"
#include "corral-glib-compat.h"
#include "fs-client.h"
#include "fs-server-private.h"

#define FLOOD 100000u

static FsEntry
walk (FsClient *c, const char *path)
{
        FsEntry e;

        g_assert_cmpint (fs_client_walk (c, path, &e), ==, 0);
        return e;
}

/* Every line of path, each checked to be a whole JSON object. (transfer full) */
static GPtrArray *
records_of (const char *path)
{
        GPtrArray *out = g_ptr_array_new_with_free_func ((GDestroyNotify) cJSON_Delete);
        g_autofree char *text = NULL;
        g_auto (GStrv) lines = NULL;

        if (!g_file_get_contents (path, &text, NULL, NULL))
                return out;
        g_assert_true (*text == '\0' || g_str_has_suffix (text, "\n"));
        lines = g_strsplit (text, "\n", -1);
        for (guint i = 0; lines[i] && lines[i][0]; i++) {
                cJSON *rec = cJSON_Parse (lines[i]);

                if (!cJSON_IsObject (rec))
                        g_error ("not a record: %s", lines[i]);
                g_ptr_array_add (out, rec);
        }
        return out;
}

static const char *
get (const cJSON *rec, const char *key)
{
        return cJSON_GetStringValue (cJSON_GetObjectItemCaseSensitive (rec, key));
}

static guint64
count_of (const cJSON *rec)
{
        const cJSON *n = cJSON_GetObjectItemCaseSensitive (rec, "count");

        return cJSON_IsNumber (n) ? (guint64) n->valuedouble : 1;
}

/* Sums the occurrences of (op, path, result) in records; *ret_lines: the lines they took. */
static guint64
occurrences (
        GPtrArray *records, const char *op, const char *path, const char *result, guint *ret_lines)
{
        guint64 total = 0;

        *ret_lines = 0;
        for (guint i = 0; i < records->len; i++) {
                const cJSON *rec = records->pdata[i];

                if (g_strcmp0 (get (rec, "op"), op) == 0 &&
                    g_strcmp0 (get (rec, "path"), path) == 0 &&
                    g_strcmp0 (get (rec, "result"), result) == 0) {
                        total += count_of (rec);
                        (*ret_lines)++;
                }
        }
        return total;
}

static guint64
file_size (const char *path)
{
        struct stat st;

        return g_stat (path, &st) == 0 ? (guint64) st.st_size : 0;
}

/* The audit log ------------------------------------------------------------------------------ */

/* 100k identical refusals: the first is a line at once (a reader right after the command
 * finds it); the rest are one line with their count (one more for every hold period the
 * flood outlasts: under ASan it takes minutes); none is lost. */
static void
test_refusals_folded (void)
{
        g_autoptr (FsClient) c = fs_client_new (FS_MODE_RO);
        g_autoptr (GPtrArray) first = NULL, all = NULL;
        FsEntry share = walk (c, "s");
        guint lines = 0;
        guint64 holds;
        gint64 start;

        g_assert_cmpint (fs_client_mkdir (c, share.node, "x", 0755, NULL), ==, -EROFS);
        first = records_of (c->audit_path);
        g_assert_cmpuint (occurrences (first, "mkdir", "x", "refused", &lines), ==, 1);
        g_assert_cmpstr (get (first->pdata[0], "rule"), ==, "read-only");
        g_assert_nonnull (strstr (get (first->pdata[0], "message"), "read-only"));

        start = g_get_monotonic_time ();
        for (guint i = 1; i < FLOOD; i++)
                g_assert_cmpint (fs_client_mkdir (c, share.node, "x", 0755, NULL), ==, -EROFS);
        holds = (guint64) ((g_get_monotonic_time () - start) / CORRAL_AUDIT_LOG_FOLD_HOLD_US);
        /* While they come in, the repeats take a line per hold period at most... */
        g_assert_cmpuint (file_size (c->audit_path), <, 512 * (holds + 2));
        fs_audit_flush (c->audit);
        /* ... and then one line with the rest of their count. */
        all = records_of (c->audit_path);
        g_assert_cmpuint (occurrences (all, "mkdir", "x", "refused", &lines), ==, FLOOD);
        g_assert_cmpuint (lines, <=, holds + 2);
        g_assert_cmpuint (file_size (c->audit_path), <, 512 * (holds + 3));
        if (holds == 0)
                g_assert_cmpuint (count_of (all->pdata[all->len - 1]), ==, FLOOD - 1);
}

/* A running server writes the folded count by itself (a timer in its main context), within
 * about a second of the last repeat; a repeat after a quiet second is its own line again. */
static void
test_folded_count_on_timer (void)
{
        g_autoptr (FsClient) c = fs_client_new (FS_MODE_RO);
        g_autoptr (GPtrArray) records = NULL;
        FsEntry share = walk (c, "s");
        guint lines = 0;
        gint64 deadline;

        for (guint i = 0; i < 3; i++)
                g_assert_cmpint (fs_client_mkdir (c, share.node, "y", 0755, NULL), ==, -EROFS);
        deadline = g_get_monotonic_time () + 5 * G_USEC_PER_SEC;
        while (g_get_monotonic_time () < deadline) {
                g_autoptr (GPtrArray) now = records_of (c->audit_path);

                if (occurrences (now, "mkdir", "y", "refused", &lines) == 3)
                        break;
                g_main_context_iteration (NULL, FALSE);
                g_usleep (10 * 1000);
        }
        g_assert_cmpuint (lines, ==, 2);

        g_usleep (CORRAL_AUDIT_LOG_FOLD_GAP_US + 100 * 1000);
        g_assert_cmpint (fs_client_mkdir (c, share.node, "y", 0755, NULL), ==, -EROFS);
        records = records_of (c->audit_path);
        g_assert_cmpuint (occurrences (records, "mkdir", "y", "refused", &lines), ==, 4);
        g_assert_cmpuint (lines, ==, 3);
        g_assert_cmpuint (count_of (records->pdata[records->len - 1]), ==, 1);
}

/* 100k different refusals: the log rotates at its size and keeps its generations, so the
 * files never hold more than (generations + 1) × the size; the newest record is in the
 * current file, every line is whole. */
static void
test_rotation (void)
{
        g_autoptr (FsClient) c = fs_client_new (FS_MODE_RO);
        g_autoptr (GPtrArray) current = NULL;
        g_autofree char *one = g_strconcat (c->audit_path, ".1", NULL);
        g_autofree char *two = g_strconcat (c->audit_path, ".2", NULL);
        g_autofree char *three = g_strconcat (c->audit_path, ".3", NULL);
        FsEntry share = walk (c, "s");
        const guint64 max = 64 * 1024;
        const char *last;

        /* The defaults SECURITY.md names. */
        g_assert_cmpuint (CORRAL_AUDIT_LOG_MAX_BYTES, ==, 8 * 1024 * 1024);
        g_assert_cmpuint (CORRAL_AUDIT_LOG_GENERATIONS, ==, 3);

        fs_audit_set_limits (c->audit, max, 2);
        for (guint i = 0; i < FLOOD; i++) {
                char name[32];

                g_snprintf (name, sizeof name, "d%u", i);
                g_assert_cmpint (fs_client_mkdir (c, share.node, name, 0755, NULL), ==, -EROFS);
        }
        fs_audit_flush (c->audit);
        g_assert_cmpuint (file_size (c->audit_path), <=, max);
        g_assert_cmpuint (file_size (one), <=, max);
        g_assert_cmpuint (file_size (two), <=, max);
        g_assert_cmpuint (file_size (one), >, max / 2);
        g_assert_false (g_file_test (three, G_FILE_TEST_EXISTS));
        current = records_of (c->audit_path);
        g_assert_cmpuint (current->len, >, 0);
        last = get (current->pdata[current->len - 1], "path");
        g_assert_cmpstr (last, ==, "d99999");
        g_ptr_array_unref (records_of (one));
        g_ptr_array_unref (records_of (two));
        g_unlink (one);
        g_unlink (two);
}

/* Every change is its own line, however alike: 1000 writes of the same file, 1000 lines. */
static void
test_changes_never_folded (void)
{
        g_autoptr (FsClient) c = fs_client_new (FS_MODE_RW);
        g_autoptr (GPtrArray) records = NULL;
        guint lines = 0;

        fs_client_host_write (c, "f", "x");
        for (guint i = 0; i < 1000; i++)
                g_assert_cmpint (fs_client_put (c, "s/f", "same"), ==, 0);
        records = records_of (c->audit_path);
        g_assert_cmpuint (occurrences (records, "write", "f", "ok", &lines), ==, 1000);
        g_assert_cmpuint (lines, ==, 1000);
}

/* A datagram socket standing in for journald's, at path. */
static int
fake_journal (const char *path)
{
        struct sockaddr_un addr = { .sun_family = AF_UNIX };
        int fd = socket (AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

        g_assert_cmpint (fd, >=, 0);
        g_strlcpy (addr.sun_path, path, sizeof addr.sun_path);
        g_assert_cmpint (bind (fd, (struct sockaddr *) &addr, sizeof addr), ==, 0);
        return fd;
}

/* The organisation's audit.copyTo "journal" (SECURITY.md M5): each line also goes to the system
 * journal in its native protocol, as its own entry; turned off, nothing more is sent. */
static void
test_copy_to_journal (void)
{
        g_autoptr (FsClient) c = fs_client_new (FS_MODE_RW);
        g_autofree char *sock = g_build_filename (c->dir, "journal.sock", NULL);
        g_autofree char *saved = g_strdup (g_getenv ("CORRAL_JOURNAL_SOCKET"));
        g_autofree char *field = g_strdup_printf ("\nCORRAL_AUDIT_LOG=%s\n", c->audit_path);
        g_autofd int fd = fake_journal (sock);
        char buf[65536];
        ssize_t n;
        guint seen = 0;

        g_setenv ("CORRAL_JOURNAL_SOCKET", sock, TRUE);
        fs_audit_set_journal (c->audit, TRUE);
        g_assert_cmpint (fs_client_put (c, "s/note.txt", "hello"), ==, 0);
        /* The put is several lines (a create, a write): one entry each. */
        while ((n = recv (fd, buf, sizeof buf - 1, MSG_DONTWAIT)) > 0) {
                buf[n] = '\0';
                g_assert_true (
                        g_str_has_prefix (buf, "PRIORITY=6\nSYSLOG_IDENTIFIER=corral-audit\n"));
                g_assert_nonnull (strstr (buf, field));
                g_assert_nonnull (strstr (buf, "\nMESSAGE={"));
                g_assert_true (g_str_has_suffix (buf, "}\n"));
                if (strstr (buf, "\"path\":\"note.txt\""))
                        seen++;
        }
        g_assert_cmpuint (seen, >, 0);

        fs_audit_set_journal (c->audit, FALSE);
        g_assert_cmpint (fs_client_put (c, "s/other.txt", "x"), ==, 0);
        g_assert_cmpint (recv (fd, buf, sizeof buf, MSG_DONTWAIT), <, 0);
        g_setenv ("CORRAL_JOURNAL_SOCKET", saved ? saved : "", TRUE);
}

/* Kept copies --------------------------------------------------------------------------------- */

static guint
kept_files (FsClient *c, guint64 *ret_bytes)
{
        g_autofree char *keep = g_build_filename (c->dir, "keep", "s", NULL);
        g_autoptr (GDir) d = g_dir_open (keep, 0, NULL);
        const char *name;
        guint n = 0;

        *ret_bytes = 0;
        while (d && (name = g_dir_read_name (d))) {
                g_autofree char *path = g_build_filename (keep, name, NULL);

                *ret_bytes += file_size (path);
                n++;
        }
        return n;
}

/* An editor's save in rw-nodelete: a new file renamed over "doc". */
static int
save (FsClient *c, const char *content)
{
        FsEntry share = walk (c, "s"), e;
        uint64_t h;

        g_assert_cmpint (fs_client_create (c, share.node, ".doc.tmp", 0644, FS_O_WRONLY, &e, &h),
                         ==, 0);
        g_assert_cmpint (fs_client_write (c, h, 0, content, strlen (content)), ==,
                         (int) strlen (content));
        g_assert_cmpint (fs_client_release (c, h), ==, 0);
        return fs_client_rename (c, share.node, ".doc.tmp", share.node, "doc", 0);
}

static char *
version (guint i)
{
        /* 10 KiB that differ from every other version. */
        GString *s = g_string_new (NULL);

        g_string_printf (s, "version %u\n", i);
        while (s->len < 10 * 1024)
                g_string_append_c (s, 'a' + (char) (i % 26));
        return g_string_free (s, FALSE);
}

/* A guest that saves the same file over and over fills the quota, and then its saves are
 * refused (rule keep-full, EDQUOT) with the file as it was: nothing is replaced unkept. */
static void
test_keep_quota (void)
{
        g_autoptr (FsClient) c = fs_client_new (FS_MODE_RW_NODELETE);
        g_autofree char *audit = NULL, *after = NULL, *tmp = NULL;
        const guint64 quota = 100 * 1024;
        guint64 bytes;
        guint saved = 0, i;
        int r = 0;

        fs_keep_set_limits (c->server, quota, 1);
        fs_client_host_write (c, "doc", "the person's original");
        for (i = 0; i < 100; i++) {
                g_autofree char *v = version (i);

                r = save (c, v);
                if (r < 0)
                        break;
                saved++;
        }
        g_assert_cmpint (r, ==, -EDQUOT);
        g_assert_cmpstr (c->last_rule, ==, FS_RULE_KEEP_FULL);
        g_assert_cmpuint (saved, >=, 3);
        g_assert_cmpuint (kept_files (c, &bytes), ==, saved);
        g_assert_cmpuint (bytes, <=, quota);
        /* The refused save left everything as it was: the last accepted version... */
        {
                g_autofree char *v = version (saved - 1);
                after = fs_client_host_read (c, "doc");
                g_assert_cmpstr (after, ==, v);
        }
        /* ... and the first kept copy is the person's original. */
        audit = fs_client_audit_text (c);
        g_assert_nonnull (strstr (audit, "\"rule\":\"keep-full\""));
        g_assert_nonnull (strstr (audit, "could not keep this one"));
        g_assert_nonnull (strstr (audit, "\"errno\":\"EDQUOT\""));

        /* The person clears the kept copies: saving works again (the quota is counted from
         * the folder, not only remembered). */
        {
                g_autofree char *keep = g_build_filename (c->dir, "keep", "s", NULL);
                g_autoptr (GDir) d = g_dir_open (keep, 0, NULL);
                const char *name;

                while (d && (name = g_dir_read_name (d))) {
                        g_autofree char *path = g_build_filename (keep, name, NULL);
                        g_unlink (path);
                }
        }
        /* Recounts happen at most every few seconds; a new server counts at once. */
        fs_server_free (c->server);
        {
                g_autofree char *keep = g_build_filename (c->dir, "keep", NULL);
                g_autoptr (GError) error = NULL;

                c->server = fs_server_new (keep, c->audit);
                g_assert_true (fs_server_add_share (c->server, "s", c->share, FS_MODE_RW_NODELETE,
                                                    NULL, &error));
        }
        fs_keep_set_limits (c->server, quota, 1);
        tmp = version (1000);
        g_assert_cmpint (save (c, tmp), ==, 0);
}

/* A save of size bytes of fill: written beside "doc" on this computer (one protocol request
 * could not carry it), renamed over it by the guest, which is what makes the copy. */
static int
save_large (FsClient *c, char fill, gsize size)
{
        FsEntry share = walk (c, "s");
        g_autofree char *v = g_malloc (size + 1);

        memset (v, fill, size);
        v[size] = '\0';
        fs_client_host_write (c, ".doc.tmp", v);
        return fs_client_rename (c, share.node, ".doc.tmp", share.node, "doc", 0);
}

/* The space the person chose for a VM (fs_server_set_kept_space(), as the control socket sets
 * it) is the quota: 20 MiB versions fit three times in 64 MiB, not four; given 128 MiB, the
 * refused save goes through. */
static void
test_keep_space_chosen (void)
{
        g_autoptr (FsClient) c = fs_client_new (FS_MODE_RW_NODELETE);
        g_autoptr (GError) error = NULL;
        const gsize size = 20u << 20;
        int r = 0;
        guint i;

        fs_keep_set_limits (c->server, 0, 1);
        g_assert_true (fs_server_set_kept_space (c->server, FS_KEPT_SPACE_MIN_MIB, &error));
        g_assert_cmpuint (fs_server_get_kept_space (c->server), ==, FS_KEPT_SPACE_MIN_MIB);
        fs_client_host_write (c, "doc", "the person's original");
        for (i = 0; i < 5; i++)
                if ((r = save_large (c, 'a' + (char) i, size)) < 0)
                        break;
        /* Four saves keep the original (tiny) and three 20 MiB versions; the fifth would keep a
         * fourth and pass 64 MiB. */
        g_assert_cmpint (r, ==, -EDQUOT);
        g_assert_cmpuint (i, ==, 4);
        g_assert_cmpstr (c->last_rule, ==, FS_RULE_KEEP_FULL);

        g_assert_true (fs_server_set_kept_space (c->server, 128, &error));
        g_assert_cmpint (save_large (c, 'z', size), ==, 0);
        /* Out of range: refused, the space as it was. */
        g_assert_false (fs_server_set_kept_space (c->server, 63, &error));
        g_clear_error (&error);
        g_assert_cmpuint (fs_server_get_kept_space (c->server), ==, 128);
}

/* A full disk (here: a floor higher than any free space) refuses the first replace. */
static void
test_keep_disk_floor (void)
{
        g_autoptr (FsClient) c = fs_client_new (FS_MODE_RW_NODELETE);
        g_autofree char *after = NULL;
        guint64 bytes;

        fs_keep_set_limits (c->server, 0, G_MAXUINT64 / 4);
        fs_client_host_write (c, "doc", "the person's original");
        g_assert_cmpint (save (c, "new"), ==, -EDQUOT);
        g_assert_cmpstr (c->last_rule, ==, FS_RULE_KEEP_FULL);
        after = fs_client_host_read (c, "doc");
        g_assert_cmpstr (after, ==, "the person's original");
        g_assert_cmpuint (kept_files (c, &bytes), ==, 0);
}

/* Saving the same content again keeps nothing new: the kept copy already holds it. Every
 * replace is still logged, naming the copy. */
static void
test_keep_identical (void)
{
        g_autoptr (FsClient) c = fs_client_new (FS_MODE_RW_NODELETE);
        g_autoptr (GPtrArray) records = NULL;
        guint64 bytes;
        guint lines = 0;

        fs_client_host_write (c, "doc", "same");
        for (guint i = 0; i < 100; i++)
                g_assert_cmpint (save (c, "same"), ==, 0);
        g_assert_cmpuint (kept_files (c, &bytes), ==, 1);
        records = records_of (c->audit_path);
        g_assert_cmpuint (occurrences (records, "keep", "doc", "ok", &lines), ==, 100);
        /* A different version is kept again. */
        g_assert_cmpint (save (c, "other"), ==, 0);
        g_assert_cmpint (save (c, "third"), ==, 0);
        g_assert_cmpuint (kept_files (c, &bytes), ==, 2);
}

/* A server started again numbers its copies from 1 again: a name taken within the same second
 * gets the next number, never a refused (or, in rw, an unrecorded) change. */
static void
test_keep_names_reused (void)
{
        g_autoptr (FsClient) c = fs_client_new (FS_MODE_RW_NODELETE);
        guint64 bytes;

        fs_client_host_write (c, "doc", "v1");
        g_assert_cmpint (save (c, "v2"), ==, 0);
        c->server->keep_serial = 0; /* as after a restart */
        g_assert_cmpint (save (c, "v3"), ==, 0);
        g_assert_cmpuint (kept_files (c, &bytes), ==, 2);
}

/* The change journal is bounded (the guest decides how much it holds): past its size a last
 * "full" line, then nothing. rw-nodelete then refuses a change that would lose what it could
 * no longer record (keep-full, the original untouched); rw lets it happen, not undoable. */
static void
fill_journal (FsClient *c)
{
        FsEntry share = walk (c, "s"), e;

        fs_journal_set_max_size (c->server->journal, 8192);
        for (guint i = 0; !fs_journal_is_full (c->server->journal); i++) {
                g_autofree char *name = g_strdup_printf ("made%u", i);
                uint64_t h;

                g_assert_cmpuint (i, <, 1000);
                g_assert_cmpint (fs_client_create (c, share.node, name, 0644, FS_O_WRONLY, &e, &h),
                                 ==, 0);
                g_assert_cmpint (fs_client_write (c, h, 0, "x", 1), ==, 1);
                g_assert_cmpint (fs_client_release (c, h), ==, 0);
        }
}

static void
test_journal_full (gconstpointer data)
{
        FsMode mode = GPOINTER_TO_INT (data);
        g_autoptr (FsClient) c = fs_client_new (mode);
        g_autoptr (GError) error = NULL;
        g_autoptr (GPtrArray) records = NULL;
        g_autofree char *journal = NULL, *after = NULL;
        struct stat st;

        fs_client_host_write (c, "doc", "the person's original");
        fill_journal (c);
        journal = g_build_filename (c->server->keep_dir, FS_JOURNAL_FILE, NULL);
        g_assert_cmpint (stat (journal, &st), ==, 0);
        g_assert_cmpint (st.st_size, <=, 8192);
        records = fs_journal_read (c->server->keep_dir, &error);
        g_assert_no_error (error);
        g_assert_false (fs_journal_complete (records));
        g_assert_cmpint (((FsJournalRecord *) records->pdata[records->len - 1])->type, ==,
                         FS_JOURNAL_FULL);

        if (mode == FS_MODE_RW_NODELETE) {
                g_assert_cmpint (save (c, "new"), ==, -EDQUOT);
                g_assert_cmpstr (c->last_rule, ==, FS_RULE_KEEP_FULL);
                after = fs_client_host_read (c, "doc");
                g_assert_cmpstr (after, ==, "the person's original");
        } else {
                g_assert_cmpint (save (c, "new"), ==, 0);
                after = fs_client_host_read (c, "doc");
                g_assert_cmpstr (after, ==, "new");
        }
        /* Nothing more was written. */
        {
                struct stat again;
                g_assert_cmpint (stat (journal, &again), ==, 0);
                g_assert_cmpint (again.st_size, ==, st.st_size);
        }
        /* Keeping everything starts a new journal. */
        g_assert_true (fs_server_keep_all (c->server, &error));
        g_assert_no_error (error);
        g_assert_false (fs_journal_is_full (c->server->journal));
}

int
main (int argc, char **argv)
{
        g_test_init (&argc, &argv, NULL);
        g_test_add_func ("/mount-bounds/audit/refusals-folded", test_refusals_folded);
        g_test_add_func ("/mount-bounds/audit/folded-count-on-timer", test_folded_count_on_timer);
        g_test_add_func ("/mount-bounds/audit/rotation", test_rotation);
        g_test_add_func ("/mount-bounds/audit/changes-never-folded", test_changes_never_folded);
        g_test_add_func ("/mount-bounds/audit/copy-to-journal", test_copy_to_journal);
        g_test_add_func ("/mount-bounds/keep/quota", test_keep_quota);
        g_test_add_func ("/mount-bounds/keep/space-chosen", test_keep_space_chosen);
        g_test_add_func ("/mount-bounds/keep/disk-floor", test_keep_disk_floor);
        g_test_add_func ("/mount-bounds/keep/identical-not-copied", test_keep_identical);
        g_test_add_func ("/mount-bounds/keep/names-reused", test_keep_names_reused);
        g_test_add_data_func ("/mount-bounds/journal/full/rw", GINT_TO_POINTER (FS_MODE_RW),
                              test_journal_full);
        g_test_add_data_func ("/mount-bounds/journal/full/rw-nodelete",
                              GINT_TO_POINTER (FS_MODE_RW_NODELETE), test_journal_full);
        return g_test_run ();
}
