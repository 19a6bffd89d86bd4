/* test-image.c — the guest image store (vmm/corral-image.c) on fake image folders.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-image-sign.h"
#include "corral-image.h"

#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

typedef struct {
        char *tmp;
        char *images;
        char *dir; /* images/minimal-0123456789abcdef */
} Fixture;

static char *
sha256_text (const char *text)
{
        return g_compute_checksum_for_string (G_CHECKSUM_SHA256, text, -1);
}

static void
write_file (const char *dir, const char *name, const char *text)
{
        g_autofree char *path = g_build_filename (dir, name, NULL);
        g_autoptr (GError) error = NULL;

        g_file_set_contents (path, text, -1, &error);
        g_assert_no_error (error);
}

/* A good image: vmlinuz, initramfs.img, disk.qcow2 and their manifest. */
static void
make_image (const char *dir, const char *name, const char *extra_manifest)
{
        g_autofree char *k = sha256_text ("kernel");
        g_autofree char *i = sha256_text ("initrd");
        g_autofree char *d = sha256_text ("disk");
        g_autofree char *manifest = NULL;

        g_assert_cmpint (g_mkdir_with_parents (dir, 0755), ==, 0);
        write_file (dir, "vmlinuz", "kernel");
        write_file (dir, "initramfs.img", "initrd");
        write_file (dir, "disk.qcow2", "disk");
        manifest = g_strdup_printf (
                "{\"image\": \"%s\", \"format\": 1, \"built\": \"2024-01-02T03:04:05Z\",%s"
                " \"artifacts\": {\"vmlinuz\": \"%s\", \"initramfs.img\": \"%s\", "
                "\"disk.qcow2\": \"%s\"}}",
                name, extra_manifest ? extra_manifest : "", k, i, d);
        write_file (dir, "manifest.json", manifest);
}

static void
fixture_setup (Fixture *f, gconstpointer data)
{
        g_autoptr (GError) error = NULL;

        f->tmp = g_dir_make_tmp ("corral-test-image.XXXXXX", &error);
        g_assert_no_error (error);
        g_setenv ("XDG_CACHE_HOME", f->tmp, TRUE);
        f->images = g_build_filename (f->tmp, "corral", "images", NULL);
        f->dir = g_build_filename (f->images, "minimal-0123456789abcdef", NULL);
}

static void
rm_rf (const char *path)
{
        g_autoptr (GDir) d = g_dir_open (path, 0, NULL);
        const char *e;

        while (d != NULL && (e = g_dir_read_name (d)) != NULL) {
                g_autofree char *p = g_build_filename (path, e, NULL);
                if (g_file_test (p, G_FILE_TEST_IS_DIR) && !g_file_test (p, G_FILE_TEST_IS_SYMLINK))
                        rm_rf (p);
                else
                        g_unlink (p);
        }
        g_rmdir (path);
}

static void
fixture_teardown (Fixture *f, gconstpointer data)
{
        rm_rf (f->tmp);
        g_free (f->tmp);
        g_free (f->images);
        g_free (f->dir);
}

static void
test_lookup_ok (Fixture *f, gconstpointer data)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralImage) image = NULL;
        g_autofree char *kernel = g_build_filename (f->dir, "vmlinuz", NULL);
        g_autofree char *disk = g_build_filename (f->dir, "disk.qcow2", NULL);

        make_image (f->dir, "minimal", NULL);
        image = corral_image_lookup ("minimal", &error);
        g_assert_no_error (error);
        g_assert_nonnull (image);
        g_assert_cmpstr (image->name, ==, "minimal");
        g_assert_cmpstr (image->dir, ==, f->dir);
        g_assert_cmpstr (image->kernel, ==, kernel);
        g_assert_cmpstr (image->disk, ==, disk);
        g_assert_nonnull (image->cmdline);
        g_assert_cmpuint (strlen (image->manifest_sha256), ==, 64);
}

static void
test_lookup_boot_section (Fixture *f, gconstpointer data)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralImage) image = NULL;
        g_autofree char *initrd = g_build_filename (f->dir, "initramfs.img", NULL);

        make_image (f->dir, "minimal",
                    " \"boot\": {\"kernel\": \"vmlinuz\", \"initrd\": \"initramfs.img\","
                    " \"disk\": null, \"cmdline\": \"console=ttyS0 root=/dev/vda\"},");
        image = corral_image_lookup ("minimal", &error);
        g_assert_no_error (error);
        g_assert_cmpstr (image->initrd, ==, initrd);
        g_assert_null (image->disk);
        g_assert_cmpstr (image->cmdline, ==, "console=ttyS0 root=/dev/vda");
}

static void
test_newest_wins (Fixture *f, gconstpointer data)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralImage) image = NULL;
        g_autofree char *older = g_build_filename (f->images, "minimal-00000000000000aa", NULL);
        g_autofree char *manifest = NULL;

        make_image (older, "minimal", NULL);
        make_image (f->dir, "minimal", NULL);
        manifest = g_build_filename (older, "manifest.json", NULL);
        /* make the other one clearly older */
        {
                g_autoptr (GFile) file = g_file_new_for_path (manifest);
                g_file_set_attribute_uint64 (file, G_FILE_ATTRIBUTE_TIME_MODIFIED, 1000000,
                                             G_FILE_QUERY_INFO_NONE, NULL, &error);
                g_assert_no_error (error);
        }
        image = corral_image_lookup ("minimal", &error);
        g_assert_no_error (error);
        g_assert_cmpstr (image->dir, ==, f->dir);
}

static void
test_not_built (Fixture *f, gconstpointer data)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralImage) image = NULL;

        image = corral_image_lookup ("standard", &error);
        g_assert_null (image);
        g_assert_error (error, CORRAL_IMAGE_ERROR, CORRAL_IMAGE_ERROR_NOT_BUILT);
        g_assert_nonnull (strstr (error->message, "corralctl image build standard"));
        g_clear_error (&error);

        /* another image's folder, or an unfinished build (no manifest), does not count */
        make_image (f->dir, "minimal", NULL);
        {
                g_autofree char *partial =
                        g_build_filename (f->images, "standard-0000000000000001", NULL);
                g_autofree char *tmp =
                        g_build_filename (f->images, ".standard-00000001.tmp.abc", NULL);
                g_assert_cmpint (g_mkdir_with_parents (partial, 0755), ==, 0);
                make_image (tmp, "standard", NULL);
        }
        image = corral_image_lookup ("standard", &error);
        g_assert_error (error, CORRAL_IMAGE_ERROR, CORRAL_IMAGE_ERROR_NOT_BUILT);
}

static void
test_tampered (Fixture *f, gconstpointer data)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralImage) image = NULL;

        make_image (f->dir, "minimal", NULL);
        write_file (f->dir, "initramfs.img", "initrD");
        image = corral_image_lookup ("minimal", &error);
        g_assert_null (image);
        g_assert_error (error, CORRAL_IMAGE_ERROR, CORRAL_IMAGE_ERROR_TAMPERED);
        g_assert_nonnull (strstr (error->message, "initramfs.img"));
        g_clear_error (&error);

        /* missing artifact */
        make_image (f->dir, "minimal", NULL);
        {
                g_autofree char *p = g_build_filename (f->dir, "disk.qcow2", NULL);
                g_unlink (p);
        }
        image = corral_image_lookup ("minimal", &error);
        g_assert_error (error, CORRAL_IMAGE_ERROR, CORRAL_IMAGE_ERROR_TAMPERED);
        g_assert_nonnull (strstr (error->message, "disk.qcow2"));
        g_clear_error (&error);

        /* an artifact replaced by a symlink to identical content is refused too */
        make_image (f->dir, "minimal", NULL);
        {
                g_autofree char *p = g_build_filename (f->dir, "vmlinuz", NULL);
                g_autofree char *other = g_build_filename (f->tmp, "kernel-copy", NULL);
                write_file (f->tmp, "kernel-copy", "kernel");
                g_unlink (p);
                g_assert_cmpint (symlink (other, p), ==, 0);
        }
        image = corral_image_lookup ("minimal", &error);
        g_assert_error (error, CORRAL_IMAGE_ERROR, CORRAL_IMAGE_ERROR_TAMPERED);
        g_assert_nonnull (strstr (error->message, "vmlinuz"));
}

static void
expect_invalid (Fixture *f, const char *manifest, const char *what)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralImage) image = NULL;

        make_image (f->dir, "minimal", NULL);
        write_file (f->dir, "manifest.json", manifest);
        image = corral_image_lookup ("minimal", &error);
        if (image != NULL ||
            !g_error_matches (error, CORRAL_IMAGE_ERROR, CORRAL_IMAGE_ERROR_INVALID)) {
                g_test_message ("case %s: %s", what, error ? error->message : "accepted");
                g_test_fail ();
        }
}

static void
test_invalid (Fixture *f, gconstpointer data)
{
        g_autofree char *k = sha256_text ("kernel");
        g_autofree char *i = sha256_text ("initrd");
        g_autofree char *m = NULL;

        expect_invalid (f, "{\"image\": \"minimal\", \"artifacts\": ", "truncated");
        expect_invalid (f, "[]", "array");
        expect_invalid (f, "", "empty");
        expect_invalid (f, "{\"artifacts\": {}}", "no image");
        expect_invalid (f, "{\"image\": \"minimal\", \"artifacts\": {}}", "no artifacts");
        expect_invalid (f, "{\"image\": \"minimal\", \"artifacts\": {\"vmlinuz\": 3}}",
                        "number sha");
        expect_invalid (f, "{\"image\": \"minimal\", \"artifacts\": {\"vmlinuz\": \"abc\"}}",
                        "short sha");
        m = g_strdup_printf ("{\"image\": \"standard\", \"artifacts\": {\"vmlinuz\": \"%s\", "
                             "\"initramfs.img\": \"%s\"}}",
                             k, i);
        expect_invalid (f, m, "other image name");
        g_clear_pointer (&m, g_free);
        m = g_strdup_printf ("{\"image\": \"minimal\", \"artifacts\": {\"vmlinuz\": \"%s\"}}", k);
        expect_invalid (f, m, "no initrd");
        g_clear_pointer (&m, g_free);
        m = g_strdup_printf ("{\"image\": \"minimal\", \"artifacts\": {\"vmlinuz\": \"%s\", "
                             "\"initramfs.img\": \"%s\"}, \"boot\": {\"disk\": \"other\"}}",
                             k, i);
        expect_invalid (f, m, "boot.disk not an artifact");
        g_clear_pointer (&m, g_free);

        /* huge: more than the limit, even if it is valid JSON */
        {
                GString *s = g_string_new ("{\"image\": \"minimal\", \"pad\": \"");
                while (s->len <= CORRAL_IMAGE_MANIFEST_MAX)
                        g_string_append (s, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
                g_string_append_printf (s,
                                        "\", \"artifacts\": {\"vmlinuz\": \"%s\", "
                                        "\"initramfs.img\": \"%s\"}}",
                                        k, i);
                expect_invalid (f, s->str, "huge");
                g_string_free (s, TRUE);
        }
}

static void
test_escaping_paths (Fixture *f, gconstpointer data)
{
        g_autofree char *k = sha256_text ("kernel");
        g_autofree char *i = sha256_text ("initrd");
        const char *bad[] = { "../x", "/etc/passwd",   "sub/vmlinuz", "..", ".",
                              "",     "manifest.json", ".hidden" };

        make_image (f->dir, "minimal", NULL);
        write_file (f->images, "x", "kernel");
        for (gsize n = 0; n < G_N_ELEMENTS (bad); n++) {
                g_autofree char *m = g_strdup_printf (
                        "{\"image\": \"minimal\", \"artifacts\": {\"vmlinuz\": \"%s\", "
                        "\"initramfs.img\": \"%s\", \"%s\": \"%s\"}}",
                        k, i, bad[n], k);
                expect_invalid (f, m, bad[n]);
                g_clear_pointer (&m, g_free);
                m = g_strdup_printf ("{\"image\": \"minimal\", \"artifacts\": {\"vmlinuz\": "
                                     "\"%s\", \"initramfs.img\": \"%s\"}, \"boot\": "
                                     "{\"kernel\": \"%s\"}}",
                                     k, i, bad[n]);
                expect_invalid (f, m, bad[n]);
        }
}

static void
test_bad_name (Fixture *f, gconstpointer data)
{
        const char *bad[] = { "", "../minimal", "Minimal", "a/b", "-x", "x y" };

        for (gsize n = 0; n < G_N_ELEMENTS (bad); n++) {
                g_autoptr (GError) error = NULL;
                g_autoptr (CorralImage) image = corral_image_lookup (bad[n], &error);

                g_assert_null (image);
                g_assert_error (error, CORRAL_IMAGE_ERROR, CORRAL_IMAGE_ERROR_INVALID);
        }
        g_assert_true (corral_image_name_is_valid ("standard"));
        g_assert_true (corral_image_name_is_valid ("desktop_2"));
}

static void
test_list (Fixture *f, gconstpointer data)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (GPtrArray) list = NULL;
        g_autofree char *std = g_build_filename (f->images, "standard-00000000000000bb", NULL);

        list = corral_image_list (&error);
        g_assert_no_error (error);
        g_assert_cmpuint (list->len, ==, 0);
        g_clear_pointer (&list, g_ptr_array_unref);

        make_image (f->dir, "minimal", NULL);
        make_image (std, "standard", NULL);
        write_file (std, "disk.qcow2", "evil");
        list = corral_image_list (&error);
        g_assert_no_error (error);
        g_assert_cmpuint (list->len, ==, 2);
        CorralImageInfo *a = g_ptr_array_index (list, 0), *b = g_ptr_array_index (list, 1);
        g_assert_cmpstr (a->name, ==, "minimal");
        g_assert_true (a->verified);
        g_assert_null (a->problem);
        g_assert_cmpint (a->built, ==, 1704164645);
        g_assert_cmpstr (b->name, ==, "standard");
        g_assert_false (b->verified);
        g_assert_nonnull (strstr (b->problem, "disk.qcow2"));
}

/* build_async with a fake builder in a fake source tree */
typedef struct {
        GMainLoop *loop;
        CorralImage *image;
        GError *error;
        GPtrArray *steps;
        double last_fraction;
} BuildResult;

static void
progress_cb (double fraction, const char *text, gpointer data)
{
        BuildResult *r = data;
        g_ptr_array_add (r->steps, g_strdup (text));
        r->last_fraction = fraction;
}

static void
build_done (GObject *src, GAsyncResult *res, gpointer data)
{
        BuildResult *r = data;
        r->image = corral_image_build_finish (res, &r->error);
        g_main_loop_quit (r->loop);
}

static void
run_fake_build (Fixture *f, const char *script_body, GCancellable *cancellable, BuildResult *r)
{
        g_autofree char *src = g_build_filename (f->tmp, "src", NULL);
        g_autofree char *bdir = g_build_filename (src, "guest-image", "minimal", NULL);
        g_autofree char *script = g_build_filename (bdir, "build-minimal", NULL);
        g_autofree char *text = g_strdup_printf ("#!/bin/sh\n%s\n", script_body);
        g_autoptr (GError) error = NULL;

        g_assert_cmpint (g_mkdir_with_parents (bdir, 0755), ==, 0);
        g_file_set_contents (script, text, -1, &error);
        g_assert_no_error (error);
        g_chmod (script, 0755);
        g_setenv ("CORRAL_SOURCE_DIR", src, TRUE);
        g_setenv ("FAKE_DIR", f->images, TRUE);

        r->loop = g_main_loop_new (NULL, FALSE);
        r->steps = g_ptr_array_new_with_free_func (g_free);
        corral_image_build_async ("minimal", "/bin/true", progress_cb, r, cancellable, build_done,
                                  r);
        g_main_loop_run (r->loop);
        g_main_loop_unref (r->loop);
}

static void
test_build (Fixture *f, gconstpointer data)
{
        BuildResult r = { 0 };
        g_autofree char *dir = g_build_filename (f->images, "minimal-00000000000000cc", NULL);

        run_fake_build (f,
                        "echo '[1/2] downloading...' >&2\n"
                        "echo 'noise' >&2\n"
                        "echo '[2/2] writing...' >&2\n"
                        "d=$FAKE_DIR/minimal-00000000000000cc; mkdir -p $d\n"
                        "printf kernel >$d/vmlinuz; printf initrd >$d/initramfs.img\n"
                        "k=$(printf kernel | sha256sum | cut -c1-64)\n"
                        "i=$(printf initrd | sha256sum | cut -c1-64)\n"
                        "echo \"{\\\"image\\\": \\\"minimal\\\", \\\"artifacts\\\": "
                        "{\\\"vmlinuz\\\": \\\"$k\\\", \\\"initramfs.img\\\": \\\"$i\\\"}}\" "
                        ">$d/manifest.json\n"
                        "echo $d",
                        NULL, &r);
        g_assert_no_error (r.error);
        g_assert_nonnull (r.image);
        g_assert_cmpstr (r.image->dir, ==, dir);
        g_assert_cmpuint (r.steps->len, ==, 2);
        g_assert_cmpstr (g_ptr_array_index (r.steps, 0), ==, "downloading...");
        g_assert_cmpfloat (r.last_fraction, ==, 0.5);
        corral_image_free (r.image);
        g_ptr_array_unref (r.steps);
}

static void
test_build_fails (Fixture *f, gconstpointer data)
{
        BuildResult r = { 0 };

        run_fake_build (f, "echo '[1/3] starting' >&2; echo 'E: no such package foo' >&2; exit 3",
                        NULL, &r);
        g_assert_error (r.error, CORRAL_IMAGE_ERROR, CORRAL_IMAGE_ERROR_BUILD);
        g_assert_nonnull (strstr (r.error->message, "no such package foo"));
        g_clear_error (&r.error);
        g_ptr_array_unref (r.steps);
}

static gboolean
cancel_cb (gpointer data)
{
        g_cancellable_cancel (data);
        return G_SOURCE_REMOVE;
}

static void
test_build_cancel (Fixture *f, gconstpointer data)
{
        BuildResult r = { 0 };
        g_autoptr (GCancellable) cancellable = g_cancellable_new ();
        gint64 start = g_get_monotonic_time ();

        g_timeout_add (200, cancel_cb, cancellable);
        /* the child sleep is in the builder's process group: it must die too */
        run_fake_build (f, "echo '[1/1] waiting' >&2; sleep 30; echo done", cancellable, &r);
        g_assert_error (r.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
        g_assert_cmpint (g_get_monotonic_time () - start, <, 10 * G_USEC_PER_SEC);
        g_clear_error (&r.error);
        g_ptr_array_unref (r.steps);
}

/* An organisation's image has no builder: asked to build one that is not here, the store says how
 * to get it (import, or build from its recipe) and runs nothing from the source tree. */
static void
test_build_organisation (Fixture *f, gconstpointer data)
{
        BuildResult r = { 0 };
        g_autofree char *src = g_build_filename (f->tmp, "src", NULL);
        g_autofree char *bdir = g_build_filename (src, "guest-image", "acme", NULL);
        g_autofree char *script = g_build_filename (bdir, "build-acme", NULL);
        g_autofree char *marker = g_build_filename (f->tmp, "ran", NULL);
        g_autofree char *text = g_strdup_printf ("#!/bin/sh\ntouch %s\n", marker);

        g_assert_cmpint (g_mkdir_with_parents (bdir, 0755), ==, 0);
        g_assert_true (g_file_set_contents (script, text, -1, NULL));
        g_chmod (script, 0755);
        g_setenv ("CORRAL_SOURCE_DIR", src, TRUE);
        r.loop = g_main_loop_new (NULL, FALSE);
        r.steps = g_ptr_array_new_with_free_func (g_free);
        corral_image_build_async ("acme", "/bin/true", progress_cb, &r, NULL, build_done, &r);
        g_main_loop_run (r.loop);
        g_main_loop_unref (r.loop);
        g_assert_error (r.error, CORRAL_IMAGE_ERROR, CORRAL_IMAGE_ERROR_NOT_BUILT);
        g_assert_nonnull (strstr (r.error->message, "corralctl image import"));
        g_assert_nonnull (strstr (r.error->message, "--recipe"));
        g_assert_false (g_file_test (marker, G_FILE_TEST_EXISTS));
        g_assert_false (corral_image_is_builtin ("acme"));
        g_assert_true (corral_image_is_builtin ("minimal"));
        g_assert_true (corral_image_is_builtin ("standard"));
        g_assert_true (corral_image_is_builtin ("desktop"));
        g_clear_error (&r.error);
        g_ptr_array_unref (r.steps);
}

/* Signed images (corral-image-sign.h; SECURITY.md M9) -------------------------------------- */

/* Loads f's image under a policy text (NULL: none); NULL with the error when refused. */
static CorralImage *
load_under (Fixture *f, const char *policy_text, GError **error)
{
        g_autofree char *policy = g_build_filename (f->tmp, "managed.json", NULL);
        CorralImage *image;

        if (policy_text)
                g_assert_true (g_file_set_contents (policy, policy_text, -1, NULL));
        else
                g_unlink (policy);
        g_setenv ("CORRAL_MANAGED_POLICY", policy, TRUE);
        image = corral_image_load_dir ("minimal", f->dir, error);
        g_unsetenv ("CORRAL_MANAGED_POLICY");
        return image;
}

static void
assert_refused (Fixture *f, const char *policy_text, const char *why)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralImage) image = load_under (f, policy_text, &error);

        g_assert_null (image);
        g_assert_error (error, CORRAL_IMAGE_ERROR, CORRAL_IMAGE_ERROR_UNTRUSTED);
        g_assert_nonnull (strstr (error->message, "“minimal”"));
        if (!strstr (error->message, why))
                g_error ("“%s” does not say “%s”", error->message, why);
}

static void
assert_loads (Fixture *f, const char *policy_text)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralImage) image = load_under (f, policy_text, &error);

        g_assert_no_error (error);
        g_assert_nonnull (image);
}

static void
test_signed (Fixture *f, gconstpointer data)
{
        g_autofree char *key = g_build_filename (f->tmp, "it.key", NULL);
        g_autofree char *other = g_build_filename (f->tmp, "other.key", NULL);
        g_autofree char *sig = g_build_filename (f->dir, "manifest.sig", NULL);
        g_autofree char *pub = NULL, *other_pub = NULL, *signer = NULL, *trust = NULL;
        g_autofree char *require = NULL, *manifest = NULL;
        g_autoptr (GError) error = NULL;
        GStatBuf st;

        make_image (f->dir, "minimal", NULL);
        pub = corral_image_keygen (key, &error);
        g_assert_no_error (error);
        g_assert_cmpuint (strlen (pub), ==, 44);
        g_assert_cmpint (g_stat (key, &st), ==, 0);
        g_assert_cmpint (st.st_mode & 0777, ==, 0600);
        /* Never over an existing key. */
        g_assert_null (corral_image_keygen (key, &error));
        g_assert_error (error, G_IO_ERROR, G_IO_ERROR_EXISTS);
        g_clear_error (&error);
        other_pub = corral_image_keygen (other, &error);
        g_assert_cmpstr (other_pub, !=, pub);

        trust = g_strdup_printf ("{\"images\": {\"trustedKeys\": [\"%s\"]}}", pub);
        require = g_strdup_printf (
                "{\"images\": {\"requireSigned\": true, \"trustedKeys\": [\"%s\"]}}", pub);

        /* Unsigned: fine without a policy, or with only trusted keys; refused when required. */
        assert_loads (f, NULL);
        assert_loads (f, trust);
        assert_refused (f, require, "is not signed");
        assert_refused (f, "{\"images\": {\"requireSigned\": true}}", "is not signed");

        signer = corral_image_sign (f->dir, key, &error);
        g_assert_no_error (error);
        g_assert_cmpstr (signer, ==, pub);
        assert_loads (f, require);
        assert_loads (f, trust);
        /* A default (not locked) requirement asks nothing. */
        assert_loads (f, "{\"images\": {\"requireSigned\": {\"value\": true, \"locked\": "
                         "false}}}");
        assert_refused (f, "{\"images\": {\"requireSigned\": true}}", "names no key");

        /* Signed with a key the organisation does not trust. */
        g_free (corral_image_sign (f->dir, other, &error));
        g_assert_no_error (error);
        assert_refused (f, require, "not trusted");
        assert_refused (f, trust, "not trusted");

        /* Tampered after signing: the manifest (say, a different artifact's hash) changed. */
        g_free (corral_image_sign (f->dir, key, &error));
        assert_loads (f, require);
        manifest = g_build_filename (f->dir, "manifest.json", NULL);
        {
                g_autofree char *text = NULL, *changed = NULL;

                g_assert_true (g_file_get_contents (manifest, &text, NULL, NULL));
                changed = g_strconcat (text, " ", NULL);
                write_file (f->dir, "manifest.json", changed);
        }
        assert_refused (f, require, "changed after it was signed");

        /* A malformed or oversized signature file. */
        make_image (f->dir, "minimal", NULL);
        write_file (f->dir, "manifest.sig", "{\"key\": \"AAAA\", \"signature\": 7}");
        assert_refused (f, require, "malformed");
        {
                g_autofree char *big = g_strnfill (8192, ' ');
                write_file (f->dir, "manifest.sig", big);
        }
        assert_refused (f, require, "malformed");
        g_unlink (sig);
}

int
main (int argc, char **argv)
{
        g_test_init (&argc, &argv, NULL);
#define ADD(path, fn) g_test_add (path, Fixture, NULL, fixture_setup, fn, fixture_teardown)
        ADD ("/image/lookup/ok", test_lookup_ok);
        ADD ("/image/lookup/boot-section", test_lookup_boot_section);
        ADD ("/image/lookup/newest", test_newest_wins);
        ADD ("/image/lookup/not-built", test_not_built);
        ADD ("/image/lookup/tampered", test_tampered);
        ADD ("/image/lookup/invalid", test_invalid);
        ADD ("/image/lookup/escaping-paths", test_escaping_paths);
        ADD ("/image/lookup/bad-name", test_bad_name);
        ADD ("/image/list", test_list);
        ADD ("/image/build/ok", test_build);
        ADD ("/image/build/fails", test_build_fails);
        ADD ("/image/build/cancel", test_build_cancel);
        ADD ("/image/build/organisation", test_build_organisation);
        ADD ("/image/signed", test_signed);
        return g_test_run ();
}
