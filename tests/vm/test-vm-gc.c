/* test-vm-gc.c — what `corralctl gc` selects, on temporary folders (no libvirt, no VM).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-vm-disk.h"
#include "corral-vm-gc.h"

#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>
#include <utime.h>

typedef struct {
        char *root;
        char *vms;
        char *images;
} Fixture;

static void
write_file (const char *path, const char *contents)
{
        g_autoptr (GError) error = NULL;

        g_assert_true (g_file_set_contents (path, contents, -1, &error));
        g_assert_no_error (error);
}

static char *
make_dir (const char *parent, const char *name)
{
        char *path = g_build_filename (parent, name, NULL);

        g_assert_cmpint (g_mkdir_with_parents (path, 0700), ==, 0);
        return path;
}

/* An image folder whose manifest.json has mtime AGE seconds ago. Returns its path. */
static char *
make_image (Fixture *f, const char *entry, const char *manifest, gint64 age)
{
        char *dir = make_dir (f->images, entry);
        g_autofree char *m = g_build_filename (dir, "manifest.json", NULL);
        g_autofree char *k = g_build_filename (dir, "vmlinuz", NULL);
        struct utimbuf t;

        write_file (m, manifest);
        write_file (k, "kernel");
        t.actime = t.modtime = (time_t) (g_get_real_time () / G_USEC_PER_SEC - age);
        g_assert_cmpint (utime (m, &t), ==, 0);
        return dir;
}

/* A minimal qcow2 header naming BACKING (what corral_vm_disk_backing_file reads). */
static void
write_qcow2 (const char *path, const char *backing)
{
        guint8 buf[512] = { 'Q', 'F', 'I', 0xfb, 0, 0, 0, 3 };
        guint64 off = GUINT64_TO_BE (256);
        guint32 len = GUINT32_TO_BE ((guint32) strlen (backing));
        g_autoptr (GError) error = NULL;

        memcpy (buf + 8, &off, 8);
        memcpy (buf + 16, &len, 4);
        memcpy (buf + 256, backing, strlen (backing));
        g_assert_true (g_file_set_contents (path, (char *) buf, sizeof buf, &error));
        g_assert_no_error (error);
}

static void
fixture_set_up (Fixture *f, gconstpointer data)
{
        g_autoptr (GError) error = NULL;

        f->root = g_dir_make_tmp ("corral-gc-XXXXXX", &error);
        g_assert_no_error (error);
        f->vms = make_dir (f->root, "vms");
        f->images = make_dir (f->root, "images");
}

static void
fixture_tear_down (Fixture *f, gconstpointer data)
{
        CorralGcItem root = { .path = f->root };
        g_autoptr (GError) error = NULL;

        g_assert_true (corral_gc_remove (&root, &error));
        g_assert_no_error (error);
        g_free (f->root);
        g_free (f->vms);
        g_free (f->images);
}

static gboolean
selected (GPtrArray *items, const char *path)
{
        for (guint i = 0; i < items->len; i++)
                if (g_str_equal (((CorralGcItem *) items->pdata[i])->path, path))
                        return TRUE;
        return FALSE;
}

static void
test_select (Fixture *f, gconstpointer data)
{
        g_autofree char *live = make_dir (f->vms, "live");
        g_autofree char *orphan = make_dir (f->vms, "orphan");
        g_autofree char *orphan_log = g_build_filename (orphan, "console.log", NULL);
        g_autofree char *overlay = g_build_filename (live, "disk.qcow2", NULL);
        /* minimal: newest, old unused, old used by sha; standard: newest, old used by backing;
         * tools: old named in a domain XML; other: the only one (newest, kept). */
        g_autofree char *min_new = make_image (f, "minimal-aaaa", "{\"v\":3}", 10);
        g_autofree char *min_old = make_image (f, "minimal-bbbb", "{\"v\":1}", 300);
        g_autofree char *min_used = make_image (f, "minimal-cccc", "{\"v\":2}", 200);
        g_autofree char *std_new = make_image (f, "standard-1111", "{\"s\":2}", 10);
        g_autofree char *std_used = make_image (f, "standard-2222", "{\"s\":1}", 100);
        g_autofree char *tools_new = make_image (f, "tools-01", "{\"t\":2}", 10);
        g_autofree char *tools_xml = make_image (f, "tools-02", "{\"t\":1}", 100);
        g_autofree char *other = make_image (f, "other-ff", "{\"o\":1}", 1000);
        g_autofree char *partial = make_dir (f->images, "minimal-dddd"); /* no manifest */
        g_autofree char *not_image = make_dir (f->images, ".tmp-build");
        g_autofree char *used_sha =
                g_compute_checksum_for_string (G_CHECKSUM_SHA256, "{\"v\":2}", -1);
        g_autofree char *base = g_build_filename (std_used, "disk.qcow2", NULL);
        g_autofree char *xml = g_strdup_printf ("<domain><os><kernel>%s/vmlinuz</kernel></os>"
                                                "</domain>",
                                                tools_xml);
        const char *live_vms[] = { "live", NULL };
        const char *shas[] = { used_sha, NULL };
        const char *texts[] = { xml, NULL };
        CorralGcInput in = { .vms_dir = f->vms,
                             .images_dir = f->images,
                             .live_vms = live_vms,
                             .used_manifests = shas,
                             .used_texts = texts };
        g_autoptr (GError) error = NULL;
        g_autoptr (GPtrArray) items = NULL;
        g_autofree char *backing = NULL;

        write_file (orphan_log, "boot\n");
        write_qcow2 (overlay, base);
        backing = corral_vm_disk_backing_file (overlay, &error);
        g_assert_no_error (error);
        g_assert_cmpstr (backing, ==, base);

        items = corral_gc_select (&in, &error);
        g_assert_no_error (error);
        g_assert_nonnull (items);
        g_assert_cmpuint (items->len, ==, 2);
        g_assert_true (selected (items, orphan));
        g_assert_true (selected (items, min_old));
        /* VM folders first. */
        g_assert_cmpint (((CorralGcItem *) items->pdata[0])->kind, ==, CORRAL_GC_VM_DIR);
        g_assert_cmpuint (((CorralGcItem *) items->pdata[0])->bytes, >, 0);
        g_assert_false (selected (items, live));
        g_assert_false (selected (items, min_new));
        g_assert_false (selected (items, min_used));
        g_assert_false (selected (items, std_new));
        g_assert_false (selected (items, std_used));
        g_assert_false (selected (items, tools_new));
        g_assert_false (selected (items, tools_xml));
        g_assert_false (selected (items, other));
        g_assert_false (selected (items, partial));
        g_assert_false (selected (items, not_image));

        /* Without the users, the older images go too (never the newest of a name). */
        in.used_manifests = NULL;
        in.used_texts = NULL;
        in.live_vms = NULL;
        g_clear_pointer (&items, g_ptr_array_unref);
        items = corral_gc_select (&in, &error);
        g_assert_no_error (error);
        g_assert_cmpuint (items->len, ==, 6);
        g_assert_true (selected (items, live));
        g_assert_true (selected (items, min_used));
        g_assert_true (selected (items, std_used));
        g_assert_true (selected (items, tools_xml));
        g_assert_false (selected (items, min_new));
        g_assert_false (selected (items, other));

        /* A young orphan (a create in progress) is spared. */
        in.min_age_s = 3600;
        g_clear_pointer (&items, g_ptr_array_unref);
        items = corral_gc_select (&in, &error);
        g_assert_no_error (error);
        g_assert_false (selected (items, orphan));
        g_assert_true (selected (items, min_old));

        /* Removing deletes the folder, and only it. */
        for (guint i = 0; i < items->len; i++) {
                g_assert_true (corral_gc_remove (items->pdata[i], &error));
                g_assert_no_error (error);
        }
        g_assert_false (g_file_test (min_old, G_FILE_TEST_EXISTS));
        g_assert_true (g_file_test (min_new, G_FILE_TEST_IS_DIR));
        g_assert_true (g_file_test (orphan_log, G_FILE_TEST_EXISTS));
}

static void
test_symlink_not_followed (Fixture *f, gconstpointer data)
{
        g_autofree char *outside = make_dir (f->root, "outside");
        g_autofree char *keep = g_build_filename (outside, "keep", NULL);
        g_autofree char *orphan = make_dir (f->vms, "orphan");
        g_autofree char *link = g_build_filename (orphan, "link", NULL);
        CorralGcInput in = { .vms_dir = f->vms };
        g_autoptr (GError) error = NULL;
        g_autoptr (GPtrArray) items = NULL;

        write_file (keep, "x");
        g_assert_cmpint (symlink (outside, link), ==, 0);
        items = corral_gc_select (&in, &error);
        g_assert_no_error (error);
        g_assert_cmpuint (items->len, ==, 1);
        g_assert_true (corral_gc_remove (items->pdata[0], &error));
        g_assert_no_error (error);
        g_assert_false (g_file_test (orphan, G_FILE_TEST_EXISTS));
        g_assert_true (g_file_test (keep, G_FILE_TEST_EXISTS));
}

static void
test_missing_dirs (void)
{
        CorralGcInput in = { .vms_dir = "/nonexistent/vms", .images_dir = "/nonexistent/img" };
        g_autoptr (GError) error = NULL;
        g_autoptr (GPtrArray) items = corral_gc_select (&in, &error);

        g_assert_no_error (error);
        g_assert_cmpuint (items->len, ==, 0);
}

/* The remote pool: overlays of gone VMs, images no domain names and no kept overlay is backed
 * by (their markers go with them), orphan markers; young volumes and what is used stay. */
static void
test_remote_volumes (void)
{
#define P "/var/lib/libvirt/images/corral/"
        const gint64 now = 1000000;
        const CorralGcVolume vols[] = {
                { "corral-vm-live.qcow2", P "corral-vm-live.qcow2", P "corral-std-aa-disk.qcow2",
                  100, 1 },
                { "corral-vm-gone.qcow2", P "corral-vm-gone.qcow2", P "corral-std-bb-disk.qcow2",
                  200, 1 },
                { "corral-std-aa-disk.qcow2", P "corral-std-aa-disk.qcow2", NULL, 300, 1 },
                { "corral-std-aa-disk.qcow2.done", P "corral-std-aa-disk.qcow2.done", NULL, 0, 1 },
                { "corral-std-bb-disk.qcow2", P "corral-std-bb-disk.qcow2", NULL, 400, 1 },
                { "corral-min-cc-vmlinuz", P "corral-min-cc-vmlinuz", NULL, 500, 1 },
                { "corral-min-cc-vmlinuz.done", P "corral-min-cc-vmlinuz.done", NULL, 0, 1 },
                { "corral-min-dd-vmlinuz", P "corral-min-dd-vmlinuz", NULL, 600, 1 },
                { "corral-min-dd-vmlinuz.done", P "corral-min-dd-vmlinuz.done", NULL, 0, 1 },
                { "corral-min-ee-initrd.done", P "corral-min-ee-initrd.done", NULL, 0, 1 },
                { "corral-min-ff-vmlinuz", P "corral-min-ff-vmlinuz", NULL, 700, now - 10 },
        };
        const char *const live[] = { "live", NULL };
        /* cc is booted; dd only looks named (a longer name that starts the same). */
        const char *const texts[] = { "<kernel>" P "corral-min-cc-vmlinuz</kernel>",
                                      "<kernel>" P "corral-min-dd-vmlinuz2</kernel>", NULL };
        const char *const expected[] = { P "corral-min-dd-vmlinuz", P "corral-min-ee-initrd.done",
                                         P "corral-std-bb-disk.qcow2", P "corral-vm-gone.qcow2" };
        g_autoptr (GPtrArray) items =
                g_ptr_array_new_with_free_func ((GDestroyNotify) corral_gc_item_free);

        corral_gc_select_volumes (vols, G_N_ELEMENTS (vols), live, texts, now, 60, items);
        g_assert_cmpuint (items->len, ==, G_N_ELEMENTS (expected));
        for (guint i = 0; i < items->len; i++) {
                CorralGcItem *item = items->pdata[i];

                g_assert_cmpint (item->kind, ==, CORRAL_GC_REMOTE_VOLUME);
                g_assert_cmpstr (item->path, ==, expected[i]);
                g_assert_true (g_str_has_suffix (item->path, item->volume));
        }
        g_assert_cmpuint (((CorralGcItem *) items->pdata[3])->bytes, ==, 200);
#undef P
}

int
main (int argc, char **argv)
{
        g_test_init (&argc, &argv, NULL);
        g_test_add ("/vm-gc/select", Fixture, NULL, fixture_set_up, test_select, fixture_tear_down);
        g_test_add ("/vm-gc/symlink-not-followed", Fixture, NULL, fixture_set_up,
                    test_symlink_not_followed, fixture_tear_down);
        g_test_add_func ("/vm-gc/missing-dirs", test_missing_dirs);
        g_test_add_func ("/vm-gc/remote-volumes", test_remote_volumes);
        return g_test_run ();
}
