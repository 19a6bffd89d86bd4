/* test-task-changes.c — app/task/corral-task-changes.c: one change compared as the Changes
 * panel and `corralctl diff` show it.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

#include "corral-task-changes.h"

typedef struct {
        char *tmp;
        char *folder;
        char *kept;
} Fix;

static void
fix_setup (Fix *f, gconstpointer data)
{
        f->tmp = g_dir_make_tmp ("task-changes-XXXXXX", NULL);
        f->folder = g_build_filename (f->tmp, "share", NULL);
        f->kept = g_build_filename (f->tmp, "kept", NULL);
        g_assert_cmpint (g_mkdir (f->folder, 0700), ==, 0);
        g_assert_cmpint (g_mkdir (f->kept, 0700), ==, 0);
}

static void
fix_teardown (Fix *f, gconstpointer data)
{
        g_autofree char *cmd = g_strdup_printf ("rm -rf '%s'", f->tmp);

        g_assert_cmpint (system (cmd), ==, 0);
        g_free (f->tmp);
        g_free (f->folder);
        g_free (f->kept);
}

static void
write_file (const char *dir, const char *name, const void *data, gssize len)
{
        g_autofree char *path = g_build_filename (dir, name, NULL);

        g_assert_true (g_file_set_contents (path, data, len, NULL));
}

/* A change as corral_task_changes_load() makes it from the journal. */
static CorralTaskChange *
change (Fix *f, CorralTaskChangeKind kind, const char *path, const char *kept_name)
{
        CorralTaskChange *c = g_new0 (CorralTaskChange, 1);

        c->kind = kind;
        c->share = g_strdup ("share");
        c->path = g_strdup (path);
        c->key = g_strconcat ("share/", path, NULL);
        c->type = 'f';
        c->folder = g_strdup (f->folder);
        c->host_path = g_build_filename (f->folder, path, NULL);
        c->kept_path = kept_name ? g_build_filename (f->kept, kept_name, NULL) : NULL;
        c->content_changed = kind != CORRAL_TASK_CHANGE_RENAMED;
        c->size_before = -1;
        c->size_now = -1;
        return c;
}

static guint
lines (const GString *s)
{
        guint n = 0;

        for (gsize i = 0; i < s->len; i++)
                n += s->str[i] == '\n';
        return n;
}

/* Text: the unified diff, and both sides aligned line for line with each line marked. */
static void
test_text (Fix *f, gconstpointer data)
{
        g_autoptr (CorralTaskChange) c = change (f, CORRAL_TASK_CHANGE_MODIFIED, "a.txt", "1-a");
        g_autoptr (CorralTaskDiff) d = NULL;
        g_autoptr (GError) error = NULL;
        static const guint8 before_marks[] = { 0, 1, 0, 1, 1, 0 };
        static const guint8 after_marks[] = { 0, 2, 0, 3, 3, 0 };

        write_file (f->kept, "1-a", "same\nold one\nmiddle\ngone 1\ngone 2\nend\n", -1);
        write_file (f->folder, "a.txt", "same\nnew one\nmiddle\nend\n", -1);
        d = corral_task_change_diff (c, &error);
        g_assert_no_error (error);
        g_assert_cmpint (d->kind, ==, CORRAL_TASK_DIFF_TEXT);
        g_assert_true (g_str_has_prefix (d->unified, "--- a/share/a.txt\n+++ b/share/a.txt\n@@"));
        g_assert_nonnull (strstr (d->unified, "\n-old one\n+new one\n"));
        g_assert_nonnull (strstr (d->unified, "\n-gone 1\n-gone 2\n"));
        g_assert_cmpuint (lines (d->before), ==, lines (d->after));
        g_assert_cmpuint (d->before_lines->len, ==, lines (d->before));
        g_assert_cmpmem (d->before_lines->data, d->before_lines->len, before_marks,
                         sizeof before_marks);
        g_assert_cmpmem (d->after_lines->data, d->after_lines->len, after_marks,
                         sizeof after_marks);
        g_assert_cmpstr (d->before->str, ==, "same\nold one\nmiddle\ngone 1\ngone 2\nend\n");
        g_assert_cmpstr (d->after->str, ==, "same\nnew one\nmiddle\n\n\nend\n");
        g_assert_cmpint (d->size_after, ==, 24);
}

/* Added (nothing before) and deleted (nothing after); a file written again with the same
 * bytes shows its text on both sides. */
static void
test_added_deleted_same (Fix *f, gconstpointer data)
{
        g_autoptr (CorralTaskChange) added = change (f, CORRAL_TASK_CHANGE_ADDED, "n.txt", NULL);
        g_autoptr (CorralTaskChange) deleted =
                change (f, CORRAL_TASK_CHANGE_DELETED, "gone.txt", "2-gone");
        g_autoptr (CorralTaskChange) same = change (f, CORRAL_TASK_CHANGE_MODIFIED, "s.txt", "3-s");
        g_autoptr (CorralTaskDiff) a = NULL, d = NULL, s = NULL;
        g_autoptr (GError) error = NULL;

        write_file (f->folder, "n.txt", "hello\n", -1);
        write_file (f->kept, "2-gone", "bye\n", -1);
        write_file (f->kept, "3-s", "x\ny\n", -1);
        write_file (f->folder, "s.txt", "x\ny\n", -1);
        a = corral_task_change_diff (added, NULL);
        g_assert_cmpint (a->kind, ==, CORRAL_TASK_DIFF_TEXT);
        g_assert_nonnull (strstr (a->unified, "\n+hello\n"));
        g_assert_cmpint (a->size_before, ==, -1);
        g_assert_cmpstr (a->before->str, ==, "\n");
        g_assert_cmpuint (a->before_lines->data[0], ==, CORRAL_TASK_LINE_FILLER);
        d = corral_task_change_diff (deleted, NULL);
        g_assert_cmpint (d->kind, ==, CORRAL_TASK_DIFF_TEXT);
        g_assert_nonnull (strstr (d->unified, "\n-bye\n"));
        g_assert_cmpint (d->size_after, ==, -1);
        s = corral_task_change_diff (same, &error);
        g_assert_no_error (error);
        g_assert_cmpint (s->kind, ==, CORRAL_TASK_DIFF_TEXT);
        g_assert_cmpstr (s->unified, ==, "");
        g_assert_cmpstr (s->before->str, ==, "x\ny\n");
        g_assert_cmpstr (s->after->str, ==, "x\ny\n");
}

/* What is not text is sizes; what is too large is said; a file the guest made a link, or
 * reached through a folder it replaced with a link, is not followed. */
static void
test_binary_large_links (Fix *f, gconstpointer data)
{
        g_autoptr (CorralTaskChange) bin = change (f, CORRAL_TASK_CHANGE_MODIFIED, "b.bin", "4-b");
        g_autoptr (CorralTaskChange) big = change (f, CORRAL_TASK_CHANGE_ADDED, "big.txt", NULL);
        g_autoptr (CorralTaskChange) link = change (f, CORRAL_TASK_CHANGE_MODIFIED, "l.txt", "5-l");
        g_autoptr (CorralTaskChange) via = change (f, CORRAL_TASK_CHANGE_ADDED, "dir/secret", NULL);
        g_autoptr (CorralTaskDiff) b = NULL, g = NULL, l = NULL, v = NULL;
        g_autofree char *large = g_malloc (CORRAL_TASK_DIFF_MAX_TEXT + 10);
        g_autofree char *outside = g_build_filename (f->tmp, "outside", NULL);
        g_autofree char *l_path = g_build_filename (f->folder, "l.txt", NULL);
        g_autofree char *dir_path = g_build_filename (f->folder, "dir", NULL);
        g_autofree char *secret = g_build_filename (outside, "secret", NULL);

        write_file (f->kept, "4-b", "a\0b", 3);
        write_file (f->folder, "b.bin", "a\0bc", 4);
        b = corral_task_change_diff (bin, NULL);
        g_assert_cmpint (b->kind, ==, CORRAL_TASK_DIFF_BINARY);
        g_assert_cmpint (b->size_before, ==, -1); /* as the journal said: not set here */
        g_assert_cmpint (b->size_after, ==, 4);

        memset (large, 'x', CORRAL_TASK_DIFF_MAX_TEXT + 10);
        write_file (f->folder, "big.txt", large, CORRAL_TASK_DIFF_MAX_TEXT + 10);
        g = corral_task_change_diff (big, NULL);
        g_assert_cmpint (g->kind, ==, CORRAL_TASK_DIFF_TOO_LARGE);

        g_assert_cmpint (g_mkdir (outside, 0700), ==, 0);
        write_file (outside, "secret", "not for the diff\n", -1);
        write_file (f->kept, "5-l", "was\n", -1);
        g_assert_cmpint (symlink (secret, l_path), ==, 0);
        g_assert_cmpint (symlink (outside, dir_path), ==, 0);
        l = corral_task_change_diff (link, NULL);
        g_assert_cmpint (l->kind, ==, CORRAL_TASK_DIFF_UNAVAILABLE);
        g_assert_nonnull (strstr (l->reason, "link"));
        v = corral_task_change_diff (via, NULL);
        g_assert_cmpint (v->kind, ==, CORRAL_TASK_DIFF_UNAVAILABLE);
        g_assert_nonnull (strstr (v->reason, "link"));
}

static GBytes *
png_header (guint32 w, guint32 h)
{
        guint8 d[33] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n',
                         0,    0,   0,   13,  'I',  'H',  'D',  'R' };

        d[16] = w >> 24, d[17] = w >> 16, d[18] = w >> 8, d[19] = w;
        d[20] = h >> 24, d[21] = h >> 16, d[22] = h >> 8, d[23] = h;
        d[24] = 8, d[25] = 6;
        return g_bytes_new (d, sizeof d);
}

/* Image headers: dimensions read from PNG and JPEG; an image declaring more pixels than the
 * bound is never offered for decoding (it is "binary": sizes only). */
static void
test_images (Fix *f, gconstpointer data)
{
        static const guint8 jpeg[] = { 0xff, 0xd8, 0xff, 0xe0, 0x00, 0x04, 'J',  'F',  0xff,
                                       0xc0, 0x00, 0x11, 0x08, 0x01, 0x20, 0x02, 0x80, 0x03 };
        g_autoptr (GBytes) small = png_header (640, 480), huge = png_header (100000, 100000);
        g_autoptr (CorralTaskChange) c = change (f, CORRAL_TASK_CHANGE_ADDED, "p.png", NULL);
        g_autoptr (CorralTaskDiff) ok = NULL, refused = NULL;
        guint w = 0, h = 0;

        g_assert_true (corral_task_image_size (g_bytes_get_data (small, NULL),
                                               g_bytes_get_size (small), &w, &h));
        g_assert_cmpuint (w, ==, 640);
        g_assert_cmpuint (h, ==, 480);
        g_assert_true (corral_task_image_size (jpeg, sizeof jpeg, &w, &h));
        g_assert_cmpuint (w, ==, 640);
        g_assert_cmpuint (h, ==, 288);
        g_assert_false (corral_task_image_size (jpeg, 12, &w, &h));
        g_assert_false (corral_task_image_size ((const guint8 *) "GIF89a", 6, &w, &h));

        write_file (f->folder, "p.png", g_bytes_get_data (small, NULL), g_bytes_get_size (small));
        ok = corral_task_change_diff (c, NULL);
        g_assert_cmpint (ok->kind, ==, CORRAL_TASK_DIFF_IMAGE);
        g_assert_null (ok->before_image);
        g_assert_true (g_bytes_equal (ok->after_image, small));
        write_file (f->folder, "p.png", g_bytes_get_data (huge, NULL), g_bytes_get_size (huge));
        refused = corral_task_change_diff (c, NULL);
        g_assert_cmpint (refused->kind, ==, CORRAL_TASK_DIFF_BINARY);
        g_assert_null (refused->after_image);
}

int
main (int argc, char **argv)
{
        g_test_init (&argc, &argv, NULL);
#define ADD(name, fn) g_test_add ("/task-changes/" name, Fix, NULL, fix_setup, fn, fix_teardown)
        ADD ("text", test_text);
        ADD ("added-deleted-same", test_added_deleted_same);
        ADD ("binary-large-links", test_binary_large_links);
        ADD ("images", test_images);
        return g_test_run ();
}
