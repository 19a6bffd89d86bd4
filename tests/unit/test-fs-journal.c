/* test-fs-journal.c — the change journal (mounts/server/fs-journal.h): lines read back as they
 * were written, damaged journals refused by line, a cut-short last line ignored, and the records
 * folded into the changes a person reviews (an editor's save is one modified file, a file made
 * and removed again is nothing, a renamed folder carries its files).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs-journal.h"

static FsJournalRecord *
rec_new (FsJournalType type, const char *path, const char *to)
{
        FsJournalRecord *r = g_new0 (FsJournalRecord, 1);

        r->type = type;
        r->share = g_strdup ("notes");
        r->path = g_strdup (path);
        r->to = g_strdup (to);
        r->time = 1764900000000000;
        return r;
}

static FsJournalRecord *
keep_new (const char *path, const char *copy, uint64_t size)
{
        FsJournalRecord *r = rec_new (FS_JOURNAL_KEEP, path, NULL);

        r->copy = g_strdup (copy);
        r->size = size;
        r->has_mode = true;
        r->mode = 0644;
        r->has_mtime = true;
        r->mtime = 1764800000;
        r->mtime_ns = 123456789;
        return r;
}

static FsJournalRecord *
kind_new (FsJournalType type, const char *path, const char *to, char kind)
{
        FsJournalRecord *r = rec_new (type, path, to);

        r->kind = kind;
        return r;
}

static GPtrArray *
records_new (void)
{
        return g_ptr_array_new_with_free_func ((GDestroyNotify) fs_journal_record_free);
}

static GPtrArray *
fold (GPtrArray *records)
{
        return fs_journal_changes (records);
}

/* "kind share/path[<-origin][ copy]" for each change, joined by "; " — one string to compare. */
static char *
describe (GPtrArray *changes)
{
        GString *s = g_string_new (NULL);

        for (guint i = 0; i < changes->len; i++) {
                const FsJournalChange *c = changes->pdata[i];

                if (i)
                        g_string_append (s, "; ");
                g_string_append_printf (s, "%s %s/%s", fs_journal_change_kind_name (c->kind),
                                        c->share, c->path);
                if (c->origin)
                        g_string_append_printf (s, "<-%s", c->origin);
                if (c->copy)
                        g_string_append_printf (s, " [%s]", c->copy);
                if (c->lost)
                        g_string_append_printf (s, " (lost: %s)", c->lost);
                if (c->mode_changed)
                        g_string_append_printf (s, " mode %o", c->mode);
        }
        return g_string_free (s, FALSE);
}

static char *
fold_describe (GPtrArray *records)
{
        g_autoptr (GPtrArray) changes = fold (records);

        return describe (changes);
}

static void
test_roundtrip (void)
{
        g_autoptr (FsJournalRecord) keep = keep_new ("a/b.txt", "notes/20261205T0315-1-b.txt", 12);
        g_autoptr (FsJournalRecord) ren = kind_new (FS_JOURNAL_RENAME, "x", "y/z", 'd');
        g_autofree char *line = NULL, *line2 = NULL;
        g_autoptr (FsJournalRecord) back = NULL, back2 = NULL;
        g_autoptr (GError) error = NULL;

        line = fs_journal_format (keep);
        g_assert_true (g_str_has_suffix (line, "\n"));
        g_assert_true (strchr (line, '\n') == line + strlen (line) - 1);
        back = fs_journal_parse_line (line, strlen (line) - 1, &error);
        g_assert_no_error (error);
        g_assert_cmpint (back->type, ==, FS_JOURNAL_KEEP);
        g_assert_cmpstr (back->share, ==, "notes");
        g_assert_cmpstr (back->path, ==, "a/b.txt");
        g_assert_cmpstr (back->copy, ==, "notes/20261205T0315-1-b.txt");
        g_assert_cmpuint (back->size, ==, 12);
        g_assert_cmpuint (back->mode, ==, 0644);
        g_assert_cmpint (back->mtime, ==, 1764800000);
        g_assert_cmpuint (back->mtime_ns, ==, 123456789);
        g_assert_cmpint (back->time, ==, 1764900000000000);

        ren->replaced = 'f';
        line2 = fs_journal_format (ren);
        back2 = fs_journal_parse_line (line2, strlen (line2) - 1, &error);
        g_assert_no_error (error);
        g_assert_cmpint (back2->type, ==, FS_JOURNAL_RENAME);
        g_assert_cmpstr (back2->to, ==, "y/z");
        g_assert_cmpint (back2->kind, ==, 'd');
        g_assert_cmpint (back2->replaced, ==, 'f');
        g_assert_false (back2->exchange);
}

/* Each line is one record the reader must refuse, and say why. */
static void
test_bad_lines (void)
{
        static const char *const lines[] = {
                "",
                "[]",
                "{\"t\":\"keep\"}",
                "{\"t\":\"erase\",\"share\":\"s\",\"path\":\"a\",\"time\":1}",
                "{\"t\":\"add\",\"share\":\"s\",\"path\":\"../etc/passwd\",\"time\":1}",
                "{\"t\":\"add\",\"share\":\"s\",\"path\":\"/etc/passwd\",\"time\":1}",
                "{\"t\":\"add\",\"share\":\"s\",\"path\":\"a//b\",\"time\":1}",
                "{\"t\":\"add\",\"share\":\"s\",\"path\":\"a/\",\"time\":1}",
                "{\"t\":\"add\",\"share\":\"s\",\"path\":\"a/./b\",\"time\":1}",
                "{\"t\":\"add\",\"share\":\"a/b\",\"path\":\"x\",\"time\":1}",
                "{\"t\":\"add\",\"share\":\"..\",\"path\":\"x\",\"time\":1}",
                "{\"t\":\"add\",\"share\":\"s\",\"path\":\"x\",\"kind\":\"fifo\",\"time\":1}",
                "{\"t\":\"add\",\"share\":\"s\",\"path\":\"x\",\"to\":\"y\",\"time\":1}",
                "{\"t\":\"rename\",\"share\":\"s\",\"path\":\"x\",\"time\":1}",
                "{\"t\":\"keep\",\"share\":\"s\",\"path\":\"x\",\"copy\":\"../../x\",\"size\":1,"
                "\"time\":1}",
                "{\"t\":\"keep\",\"share\":\"s\",\"path\":\"x\",\"copy\":\"s/.hidden\",\"size\":1,"
                "\"time\":1}",
                "{\"t\":\"keep\",\"share\":\"s\",\"path\":\"x\",\"copy\":\"s/a/b\",\"size\":1,"
                "\"time\":1}",
                "{\"t\":\"keep\",\"share\":\"s\",\"path\":\"x\",\"size\":4,\"time\":1}",
                "{\"t\":\"add\",\"share\":\"s\",\"path\":\"x\",\"copy\":\"s/x\",\"time\":1}",
                "{\"t\":\"meta\",\"share\":\"s\",\"path\":\"x\",\"time\":1}",
                "{\"t\":\"meta\",\"share\":\"s\",\"path\":\"x\",\"mode\":65535,\"time\":1}",
                "{\"t\":\"keep\",\"share\":\"s\",\"path\":\"x\",\"size\":-1,\"time\":1}",
                "{\"t\":\"keep\",\"share\":\"s\",\"path\":\"x\",\"size\":1.5,\"time\":1}",
                "{\"t\":\"keep\",\"share\":\"s\",\"path\":\"x\",\"size\":1e300,\"time\":1}",
                "{\"t\":\"add\",\"share\":\"s\",\"path\":\"x\",\"exchange\":true,\"time\":1}",
                "{\"t\":\"add\",\"share\":\"s\",\"path\":\"x\",\"time\":\"now\"}",
                "{\"t\":\"keep\",\"share\":\"s\",\"path\":\"x\",\"copy\":\"s/"
                "x\",\"lost\":\"budget\","
                "\"size\":1,\"time\":1}",
                "{\"t\":\"share\",\"share\":\"s\",\"time\":1}",
                "{\"t\":\"share\",\"share\":\"s\",\"folder\":\"home/x\",\"time\":1}",
                "{\"t\":\"share\",\"share\":\"s\",\"path\":\"a\",\"folder\":\"/x\",\"time\":1}",
                "{\"t\":\"add\",\"share\":\"s\",\"path\":\"a\",\"folder\":\"/x\",\"time\":1}",
                "{\"t\":\"wrote\",\"share\":\"s\",\"path\":\"a\",\"size\":1,\"time\":1}",
                "{\"t\":\"times\",\"share\":\"s\",\"path\":\"a\",\"time\":1}",
                "{\"t\":\"undone\",\"share\":\"s\",\"time\":1}",
        };

        for (guint i = 0; i < G_N_ELEMENTS (lines); i++) {
                g_autoptr (GError) error = NULL;
                g_autoptr (FsJournalRecord) r =
                        fs_journal_parse_line (lines[i], strlen (lines[i]), &error);

                if (r)
                        g_error ("accepted: %s", lines[i]);
                g_assert_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA);
                g_assert_cmpstr (error->message, !=, "");
        }
        {
                static const char nul[] =
                        "{\"t\":\"add\",\"share\":\"s\",\"path\":\"x\0y\",\"time\":1}";
                g_autoptr (GError) error = NULL;

                g_assert_null (fs_journal_parse_line (nul, sizeof nul - 1, &error));
                g_assert_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA);
        }
        {
                g_autofree char *big = g_strnfill (FS_JOURNAL_MAX_LINE + 1, ' ');
                g_autoptr (GError) error = NULL;

                g_assert_null (fs_journal_parse_line (big, strlen (big), &error));
                g_assert_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA);
        }
}

static void
test_parse_file (void)
{
        const char *good =
                "{\"t\":\"add\",\"share\":\"s\",\"path\":\"a\",\"kind\":\"file\",\"time\":1}\n"
                "{\"t\":\"keep\",\"share\":\"s\",\"path\":\"e\",\"size\":0,\"time\":2}\n";
        g_autofree char *torn = g_strconcat (good, "{\"t\":\"add\",\"sh", NULL);
        g_autofree char *damaged = g_strconcat (good, "{\"t\":\"add\"}\n", good, NULL);
        g_autoptr (GPtrArray) a = NULL, b = NULL, c = NULL;
        g_autoptr (GError) error = NULL;

        a = fs_journal_parse (good, strlen (good), &error);
        g_assert_no_error (error);
        g_assert_cmpuint (a->len, ==, 2);

        /* kill -9 in the middle of a write: the records before it are all there. */
        b = fs_journal_parse (torn, strlen (torn), &error);
        g_assert_no_error (error);
        g_assert_cmpuint (b->len, ==, 2);

        c = fs_journal_parse (damaged, strlen (damaged), &error);
        g_assert_null (c);
        g_assert_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA);
        g_assert_nonnull (strstr (error->message, "line 3"));
}

static void
test_fold_basic (void)
{
        g_autoptr (GPtrArray) r = records_new ();
        g_autofree char *d = NULL;

        /* Written in place: modified, with its copy. */
        g_ptr_array_add (r, keep_new ("a.txt", "notes/1-a.txt", 5));
        /* Twice: the first copy is the original. */
        g_ptr_array_add (r, keep_new ("a.txt", "notes/2-a.txt", 7));
        /* Made: added. */
        g_ptr_array_add (r, kind_new (FS_JOURNAL_ADD, "new.txt", NULL, 'f'));
        /* Made and removed again: nothing. */
        g_ptr_array_add (r, kind_new (FS_JOURNAL_ADD, "tmp.txt", NULL, 'f'));
        g_ptr_array_add (r, kind_new (FS_JOURNAL_DELETE, "tmp.txt", NULL, 'f'));
        /* An original removed (approved): deleted, with its copy. */
        g_ptr_array_add (r, keep_new ("old.txt", "notes/3-old.txt", 9));
        g_ptr_array_add (r, kind_new (FS_JOURNAL_DELETE, "old.txt", NULL, 'f'));
        /* Renamed: from → to. */
        g_ptr_array_add (r, kind_new (FS_JOURNAL_RENAME, "b.txt", "c.txt", 'f'));
        /* Mode changed. */
        {
                FsJournalRecord *m = rec_new (FS_JOURNAL_META, "run.sh", NULL);
                m->has_mode = true;
                m->mode = 0644;
                g_ptr_array_add (r, m);
        }
        /* Renamed and back: nothing. */
        g_ptr_array_add (r, kind_new (FS_JOURNAL_RENAME, "z", "z2", 'f'));
        g_ptr_array_add (r, kind_new (FS_JOURNAL_RENAME, "z2", "z", 'f'));

        d = fold_describe (r);
        g_assert_cmpstr (d, ==,
                         "modified notes/a.txt [notes/1-a.txt]; renamed notes/c.txt<-b.txt; "
                         "added notes/new.txt; deleted notes/old.txt [notes/3-old.txt]; "
                         "modified notes/run.sh mode 644");
}

/* gedit, vim with backupcopy=no, LibreOffice: write a new file, rename it over the old one. */
static void
test_fold_editor_save (void)
{
        g_autoptr (GPtrArray) r = records_new ();
        g_autofree char *d = NULL;

        g_ptr_array_add (r, kind_new (FS_JOURNAL_ADD, ".goutputstream-X1", NULL, 'f'));
        g_ptr_array_add (r, keep_new ("doc.txt", "notes/1-doc.txt", 3));
        {
                FsJournalRecord *ren =
                        kind_new (FS_JOURNAL_RENAME, ".goutputstream-X1", "doc.txt", 'f');
                ren->replaced = 'f';
                g_ptr_array_add (r, ren);
        }
        /* vim's other way: the old one renamed to a backup, a new one written, backup removed. */
        g_ptr_array_add (r, kind_new (FS_JOURNAL_RENAME, "v.txt", "v.txt~", 'f'));
        g_ptr_array_add (r, kind_new (FS_JOURNAL_ADD, "v.txt", NULL, 'f'));
        g_ptr_array_add (r, keep_new ("v.txt~", "notes/2-v.txt", 4));
        g_ptr_array_add (r, kind_new (FS_JOURNAL_DELETE, "v.txt~", NULL, 'f'));

        d = fold_describe (r);
        g_assert_cmpstr (d, ==,
                         "modified notes/doc.txt [notes/1-doc.txt]; "
                         "modified notes/v.txt [notes/2-v.txt]");
}

static void
test_fold_folder_rename (void)
{
        g_autoptr (GPtrArray) r = records_new ();
        g_autofree char *d = NULL;

        g_ptr_array_add (r, keep_new ("src/main.c", "notes/1-main.c", 10));
        g_ptr_array_add (r, kind_new (FS_JOURNAL_ADD, "src/new.c", NULL, 'f'));
        g_ptr_array_add (r, kind_new (FS_JOURNAL_RENAME, "src", "lib", 'd'));
        /* A file in the moved folder never touched before: found by the folder's rename. */
        g_ptr_array_add (r, keep_new ("lib/util.c", "notes/2-util.c", 4));

        d = fold_describe (r);
        g_assert_cmpstr (d, ==,
                         "renamed notes/lib<-src; renamed notes/lib/main.c<-src/main.c "
                         "[notes/1-main.c]; added notes/lib/new.c; "
                         "renamed notes/lib/util.c<-src/util.c [notes/2-util.c]");
}

static void
test_fold_swap (void)
{
        g_autoptr (GPtrArray) r = records_new ();
        g_autofree char *d = NULL;
        FsJournalRecord *x = kind_new (FS_JOURNAL_RENAME, "a", "b", 'f');

        x->exchange = true;
        x->replaced = 'f';
        g_ptr_array_add (r, x);
        d = fold_describe (r);
        g_assert_cmpstr (d, ==, "renamed notes/a<-b; renamed notes/b<-a");
}

static void
test_fold_lost (void)
{
        g_autoptr (GPtrArray) r = records_new ();
        g_autofree char *d = NULL;
        FsJournalRecord *k = keep_new ("big.iso", NULL, 1 << 30);

        k->lost = g_strdup ("budget");
        g_ptr_array_add (r, k);
        d = fold_describe (r);
        g_assert_cmpstr (d, ==, "modified notes/big.iso (lost: budget)");
}

/* The person undid changes: they are no longer listed; a folder put back carries what the
 * journal lists beneath it back too. */
static void
test_fold_undone (void)
{
        g_autoptr (GPtrArray) r = records_new ();
        g_autofree char *d = NULL;

        g_ptr_array_add (r, keep_new ("a.txt", "notes/1-a.txt", 5));
        g_ptr_array_add (r, kind_new (FS_JOURNAL_ADD, "new.txt", NULL, 'f'));
        g_ptr_array_add (r, keep_new ("old.txt", "notes/2-old.txt", 9));
        g_ptr_array_add (r, kind_new (FS_JOURNAL_DELETE, "old.txt", NULL, 'f'));
        g_ptr_array_add (r, keep_new ("src/m.c", "notes/3-m.c", 2));
        g_ptr_array_add (r, kind_new (FS_JOURNAL_RENAME, "src", "lib", 'd'));
        g_ptr_array_add (r, rec_new (FS_JOURNAL_UNDONE, "a.txt", NULL));
        g_ptr_array_add (r, rec_new (FS_JOURNAL_UNDONE, "new.txt", NULL));
        g_ptr_array_add (r, rec_new (FS_JOURNAL_UNDONE, "old.txt", NULL));
        g_ptr_array_add (r, rec_new (FS_JOURNAL_UNDONE, "lib", NULL));
        d = fold_describe (r);
        g_assert_cmpstr (d, ==, "modified notes/src/m.c [notes/3-m.c]");
}

/* "wrote" is the file as the guest left it; "times" a date changed alone; "share" the folder. */
static void
test_fold_after_and_times (void)
{
        g_autoptr (GPtrArray) r = records_new ();
        g_autoptr (GPtrArray) changes = NULL;
        g_autoptr (GHashTable) folders = NULL;
        FsJournalRecord *w, *t, *sh;
        const FsJournalChange *a, *b;

        sh = rec_new (FS_JOURNAL_SHARE, NULL, NULL);
        sh->folder = g_strdup ("/home/ada/Notes");
        g_ptr_array_add (r, sh);
        g_ptr_array_add (r, keep_new ("a.txt", "notes/1-a.txt", 5));
        w = rec_new (FS_JOURNAL_WROTE, "a.txt", NULL);
        w->size = 12;
        w->has_mtime = true;
        w->mtime = 1764900001;
        w->mtime_ns = 7;
        g_ptr_array_add (r, w);
        t = rec_new (FS_JOURNAL_TIMES, "b.txt", NULL);
        t->has_mtime = true;
        t->mtime = 1700000000;
        g_ptr_array_add (r, t);
        changes = fs_journal_changes (r);
        g_assert_cmpuint (changes->len, ==, 2);
        a = changes->pdata[0];
        b = changes->pdata[1];
        g_assert_true (a->has_after);
        g_assert_cmpuint (a->after_size, ==, 12);
        g_assert_cmpint (a->after_mtime, ==, 1764900001);
        g_assert_cmpuint (a->after_mtime_ns, ==, 7);
        g_assert_false (a->time_changed);
        g_assert_cmpint (b->kind, ==, FS_JOURNAL_MODIFIED);
        g_assert_true (b->time_changed);
        g_assert_false (b->content_changed);
        g_assert_cmpint (b->mtime, ==, 1700000000);
        folders = fs_journal_share_folders (r);
        g_assert_cmpstr (g_hash_table_lookup (folders, "notes"), ==, "/home/ada/Notes");

        /* Writing again, and no word of how it ended (a crash): how it was left is unknown. */
        g_ptr_array_add (r, rec_new (FS_JOURNAL_WRITING, "a.txt", NULL));
        g_clear_pointer (&changes, g_ptr_array_unref);
        changes = fs_journal_changes (r);
        g_assert_false (((FsJournalChange *) changes->pdata[0])->has_after);
}

static void
test_writer (void)
{
        g_autofree char *dir = g_dir_make_tmp ("corral-journal-XXXXXX", NULL);
        g_autofree char *path = g_build_filename (dir, "kept", FS_JOURNAL_FILE, NULL);
        g_autofree char *keep_dir = g_build_filename (dir, "kept", NULL);
        g_autoptr (GError) error = NULL;
        g_autoptr (GPtrArray) back = NULL, empty = NULL;
        struct stat st;

        empty = fs_journal_read (keep_dir, &error);
        g_assert_no_error (error);
        g_assert_cmpuint (empty->len, ==, 0);
        {
                g_autoptr (FsJournal) j = fs_journal_open (keep_dir);
                g_autoptr (FsJournalRecord) a = kind_new (FS_JOURNAL_ADD, "a", NULL, 'f');
                g_autoptr (FsJournalRecord) k = keep_new ("b", "notes/1-b", 2);

                g_assert_cmpint (fs_journal_append (j, a, false), ==, 0);
                g_assert_cmpint (fs_journal_append (j, k, true), ==, 0);
        }
        g_assert_cmpint (stat (path, &st), ==, 0);
        g_assert_cmpuint (st.st_mode & 07777, ==, 0600);
        g_assert_cmpint (stat (keep_dir, &st), ==, 0);
        g_assert_cmpuint (st.st_mode & 07777, ==, 0700);

        /* A write cut short by kill -9, then the server starts again and appends. */
        {
                int fd = open (path, O_WRONLY | O_APPEND);
                g_assert_cmpint (fd, >=, 0);
                g_assert_cmpint (write (fd, "{\"t\":\"ad", 8), ==, 8);
                close (fd);
        }
        {
                g_autoptr (FsJournal) j = fs_journal_open (keep_dir);
                g_autoptr (FsJournalRecord) c = kind_new (FS_JOURNAL_ADD, "c", NULL, 'd');

                g_assert_cmpint (fs_journal_append (j, c, false), ==, 0);
        }
        back = fs_journal_read (keep_dir, &error);
        g_assert_no_error (error);
        g_assert_cmpuint (back->len, ==, 3);
        g_assert_cmpstr (((FsJournalRecord *) back->pdata[2])->path, ==, "c");
        g_assert_cmpint (((FsJournalRecord *) back->pdata[2])->kind, ==, 'd');

        g_assert_cmpint (g_unlink (path), ==, 0);
        g_assert_cmpint (g_rmdir (keep_dir), ==, 0);
        g_assert_cmpint (g_rmdir (dir), ==, 0);
}

/* Past its size the writer adds one "full" line and nothing more, also after a restart, until
 * the journal is emptied. */
static void
test_writer_full (void)
{
        g_autofree char *dir = g_dir_make_tmp ("corral-journal-XXXXXX", NULL);
        g_autofree char *path = g_build_filename (dir, FS_JOURNAL_FILE, NULL);
        g_autoptr (GError) error = NULL;
        g_autoptr (GPtrArray) back = NULL;
        guint written = 0;
        int r = 0;
        struct stat st;

        {
                g_autoptr (FsJournal) j = fs_journal_open (dir);

                fs_journal_set_max_size (j, 2048);
                while (r == 0) {
                        g_autoptr (FsJournalRecord) a = kind_new (FS_JOURNAL_ADD, "a", NULL, 'f');
                        if ((r = fs_journal_append (j, a, false)) == 0)
                                written++;
                }
                g_assert_cmpint (r, ==, -EFBIG);
                g_assert_true (fs_journal_is_full (j));
        }
        g_assert_cmpuint (written, >, 5);
        g_assert_cmpint (stat (path, &st), ==, 0);
        g_assert_cmpint (st.st_size, <=, 2048);
        back = fs_journal_read (dir, &error);
        g_assert_no_error (error);
        g_assert_cmpuint (back->len, ==, written + 1);
        g_assert_false (fs_journal_complete (back));
        {
                g_autoptr (FsJournal) j = fs_journal_open (dir);
                g_autoptr (FsJournalRecord) a = kind_new (FS_JOURNAL_ADD, "b", NULL, 'f');

                fs_journal_set_max_size (j, 2048);
                g_assert_cmpint (fs_journal_append (j, a, false), ==, -EFBIG);
                g_assert_cmpint (fs_journal_empty (j), ==, 0);
                g_assert_false (fs_journal_is_full (j));
                g_assert_cmpint (fs_journal_append (j, a, false), ==, 0);
        }
        g_assert_cmpint (g_unlink (path), ==, 0);
        g_assert_cmpint (g_rmdir (dir), ==, 0);
}

int
main (int argc, char **argv)
{
        g_test_init (&argc, &argv, NULL);
        g_test_add_func ("/fs-journal/roundtrip", test_roundtrip);
        g_test_add_func ("/fs-journal/bad-lines", test_bad_lines);
        g_test_add_func ("/fs-journal/parse-file", test_parse_file);
        g_test_add_func ("/fs-journal/fold/basic", test_fold_basic);
        g_test_add_func ("/fs-journal/fold/editor-save", test_fold_editor_save);
        g_test_add_func ("/fs-journal/fold/folder-rename", test_fold_folder_rename);
        g_test_add_func ("/fs-journal/fold/swap", test_fold_swap);
        g_test_add_func ("/fs-journal/fold/lost", test_fold_lost);
        g_test_add_func ("/fs-journal/fold/undone", test_fold_undone);
        g_test_add_func ("/fs-journal/fold/after-and-times", test_fold_after_and_times);
        g_test_add_func ("/fs-journal/writer", test_writer);
        g_test_add_func ("/fs-journal/writer-full", test_writer_full);
        return g_test_run ();
}
