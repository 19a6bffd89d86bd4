/* bench-policy.c — what the organisation's policy costs where it is decided, next to the work
 * it sits on, in the same run:
 *   1. reading the managed policy (a main file and two drop-ins, 250 denied hosts, shared
 *      folders, providers, images) and merging it, against parsing the same files with cJSON
 *      alone: what every start, file server and egress proxy pays once;
 *   2. the image gate on a 256 MiB image with the signature required and checked (M9),
 *      against the same gate without a policy: the signature's share of a start's image check;
 *   3. a workspace made ready ahead, its image checked again at Start (corral_image_recheck:
 *      the folder unchanged, the signature checked against the policy read again), against
 *      verifying it in full.
 * Each row prints both medians and their ratio (BENCH_ROUNDS rounds, default 9).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <cjson/cJSON.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench-common.h"
#include "corral-image-sign.h"
#include "corral-image.h"
#include "corral-policy.h"

static char *
sha256_file (const char *path)
{
        g_autoptr (GMappedFile) m = g_mapped_file_new (path, FALSE, NULL);

        g_assert_nonnull (m);
        return g_compute_checksum_for_data (G_CHECKSUM_SHA256,
                                            (const guchar *) g_mapped_file_get_contents (m),
                                            g_mapped_file_get_length (m));
}

static void
write_file (const char *dir, const char *name, const char *text)
{
        g_autofree char *path = g_build_filename (dir, name, NULL);

        g_assert_true (g_file_set_contents (path, text, -1, NULL));
}

/* A main policy and two drop-ins, as a large organisation might deploy them. */
static char *
write_policy (const char *dir)
{
        g_autofree char *drop = g_build_filename (dir, "managed.d", NULL);
        g_autoptr (GString) hosts = g_string_new (NULL);

        g_assert_cmpint (g_mkdir_with_parents (drop, 0755), ==, 0);
        for (guint i = 0; i < 250; i++)
                g_string_append_printf (hosts, "%s\"blocked-%u.example.com\"", i ? ", " : "", i);
        {
                g_autofree char *main_text = g_strdup_printf (
                        "{\"minimumVersion\": \"0.1.0\",\n"
                        " \"sharedFolders\": {\"maxMode\": \"rw-nodelete\", \"deniedFolders\": "
                        "[\"/etc\", \"/root\", \"/var\"], \"protectedPaths\": [\".ssh/\", "
                        "\".gnupg/\", \"deploy/\"]},\n"
                        " \"network\": {\"preset\": \"allowlist\", \"deniedHosts\": [%s], "
                        "\"personMayApproveHosts\": false},\n"
                        " \"providers\": {\"allowed\": [\"anthropic\", \"openai-compatible\"]},\n"
                        " \"vm\": {\"maxMemoryMib\": 8192, \"maxVcpus\": 4},\n"
                        " \"audit\": {\"copyTo\": [\"journal\"], \"keepDays\": 90}}\n",
                        hosts->str);
                write_file (dir, "managed.json", main_text);
        }
        write_file (drop, "10-research.json",
                    "{\"network\": {\"allowedHosts\": [\"pypi.org\", \"files.pythonhosted.org\", "
                    "\"github.com\"]}, \"vm\": {\"maxVcpus\": 2}}\n");
        write_file (drop, "20-images.json",
                    "{\"images\": {\"allowed\": [\"minimal\", \"standard\", \"acme\"]}}\n");
        return g_build_filename (dir, "managed.json", NULL);
}

static double
time_policy_load (const char *path)
{
        double t = bench_now ();
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralPolicy) p = corral_policy_load (path, &error);

        g_assert_no_error (error);
        g_assert_nonnull (p);
        return bench_now () - t;
}

static double
time_cjson_only (const char *dir)
{
        static const char *const files[] = { "managed.json", "managed.d/10-research.json",
                                             "managed.d/20-images.json" };
        double t = bench_now ();

        for (guint i = 0; i < G_N_ELEMENTS (files); i++) {
                g_autofree char *path = g_build_filename (dir, files[i], NULL);
                g_autofree char *text = NULL;
                gsize len = 0;

                g_assert_true (g_file_get_contents (path, &text, &len, NULL));
                cJSON_Delete (cJSON_ParseWithLength (text, len));
        }
        return bench_now () - t;
}

/* A 256 MiB image: the size of the standard image's disk. */
static void
write_image (const char *dir)
{
        g_autofree char *disk = g_build_filename (dir, "disk.qcow2", NULL);
        g_autofree char *kernel = g_build_filename (dir, "vmlinuz", NULL);
        g_autofree char *initrd = g_build_filename (dir, "initramfs.img", NULL);
        g_autofree char *cmd = g_strdup_printf (
                "head -c 268435456 /dev/urandom > '%s' && head -c 8388608 /dev/urandom > '%s' && "
                "head -c 2097152 /dev/urandom > '%s'",
                disk, kernel, initrd);
        g_autofree char *k = NULL, *i = NULL, *d = NULL, *manifest = NULL;

        g_assert_cmpint (g_mkdir_with_parents (dir, 0755), ==, 0);
        g_assert_cmpint (system (cmd), ==, 0);
        k = sha256_file (kernel);
        i = sha256_file (initrd);
        d = sha256_file (disk);
        manifest = g_strdup_printf (
                "{\"image\": \"acme\", \"format\": 1, \"built\": \"2026-12-01T00:00:00Z\", "
                "\"boot\": {\"kernel\": \"vmlinuz\", \"initrd\": \"initramfs.img\", \"disk\": "
                "\"disk.qcow2\"}, \"artifacts\": {\"vmlinuz\": \"%s\", \"initramfs.img\": \"%s\", "
                "\"disk.qcow2\": \"%s\"}}",
                k, i, d);
        write_file (dir, "manifest.json", manifest);
}

static double
time_load (const char *dir, CorralImage **keep)
{
        double t = bench_now ();
        g_autoptr (GError) error = NULL;
        CorralImage *image = corral_image_load_dir ("acme", dir, &error);

        g_assert_no_error (error);
        t = bench_now () - t;
        if (keep && !*keep)
                *keep = image;
        else
                corral_image_free (image);
        return t;
}

static double
time_recheck (const CorralImage *image)
{
        double t = bench_now ();
        g_autoptr (GError) error = NULL;

        g_assert_true (corral_image_recheck (image, &error));
        return bench_now () - t;
}

static void
row (const char *name, GArray *a, GArray *b)
{
        double x = bench_median (a), y = bench_median (b);

        g_print ("%-34s %12.3f %12.3f %8.4f\n", name, x * 1000, y * 1000, x / y);
}

int
main (int argc, char **argv)
{
        g_autofree char *tmp = g_dir_make_tmp ("corral-bench-policy-XXXXXX", NULL);
        g_autofree char *policy_dir = g_build_filename (tmp, "etc", NULL);
        g_autofree char *image_dir = g_build_filename (tmp, "acme", NULL);
        g_autofree char *key = g_build_filename (tmp, "it.key", NULL);
        g_autofree char *signed_policy = g_build_filename (tmp, "signed.json", NULL);
        g_autofree char *cmd = g_strdup_printf ("rm -rf '%s'", tmp);
        g_autofree char *main_path = NULL, *pub = NULL, *text = NULL;
        g_autoptr (GError) error = NULL;
        const char *env_rounds = g_getenv ("BENCH_ROUNDS");
        guint rounds = env_rounds ? (guint) g_ascii_strtoull (env_rounds, NULL, 10) : 9;
        GArray *s[6];
        CorralImage *kept = NULL;

        rounds = CLAMP (rounds, 1, 1000);
        for (guint i = 0; i < G_N_ELEMENTS (s); i++)
                s[i] = g_array_new (FALSE, FALSE, sizeof (double));
        main_path = write_policy (policy_dir);
        g_print ("writing a 266 MiB image and signing it...\n");
        write_image (image_dir);
        pub = corral_image_keygen (key, &error);
        g_assert_no_error (error);
        g_free (corral_image_sign (image_dir, key, &error));
        g_assert_no_error (error);
        text = g_strdup_printf (
                "{\"images\": {\"requireSigned\": true, \"trustedKeys\": [\"%s\"]}}", pub);
        g_assert_true (g_file_set_contents (signed_policy, text, -1, NULL));

        for (guint r = 0; r < rounds; r++) {
                double a, b;

                /* 1: many loads per round (each takes well under a millisecond) */
                a = b = 0;
                for (guint i = 0; i < 50; i++) {
                        a += time_policy_load (main_path);
                        b += time_cjson_only (policy_dir);
                }
                a /= 50;
                b /= 50;
                g_array_append_val (s[0], a);
                g_array_append_val (s[1], b);
                /* 2: the gate with the signature required, and without a policy */
                g_setenv ("CORRAL_MANAGED_POLICY", signed_policy, TRUE);
                a = time_load (image_dir, &kept);
                g_setenv ("CORRAL_MANAGED_POLICY", "/nonexistent/managed.json", TRUE);
                b = time_load (image_dir, NULL);
                g_array_append_val (s[2], a);
                g_array_append_val (s[3], b);
                /* 3: checked again at Start, against in full (both under the policy) */
                g_setenv ("CORRAL_MANAGED_POLICY", signed_policy, TRUE);
                a = time_recheck (kept);
                b = time_load (image_dir, NULL);
                g_array_append_val (s[4], a);
                g_array_append_val (s[5], b);
        }
        g_print ("\n%-34s %12s %12s %8s\n", "policy (BENCH_ROUNDS medians)", "Corral (ms)",
                 "baseline (ms)", "ratio");
        row ("read+merge policy vs cJSON parse", s[0], s[1]);
        row ("image gate signed vs unsigned", s[2], s[3]);
        row ("warm image recheck vs full verify", s[4], s[5]);
        corral_image_free (kept);
        for (guint i = 0; i < G_N_ELEMENTS (s); i++)
                g_array_unref (s[i]);
        g_assert_cmpint (system (cmd), ==, 0);
        return 0;
}
