/* test-paths.c — util/corral-paths.c finds the helpers and the image recipes where meson builds
 * and installs them: the build tree's own when the program runs from it, the prefix's when it
 * is installed, an environment variable above both.
 *
 * meson's own answers are the reference: the helpers' build paths come as arguments
 * (NAME=PATH, from each executable's full_path()), their install paths from
 * meson-info/intro-installed.json, so neither the table in corral-paths.c nor an install rule
 * can drift without this failing.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <cjson/cJSON.h>
#include <glib.h>
#include <string.h>

#include "corral-paths.h"

static const char *const helper_names[] = {
        CORRAL_HELPER_AGENT,   CORRAL_HELPER_FS,       CORRAL_HELPER_FSD,
        CORRAL_HELPER_EGRESSD, CORRAL_HELPER_NETPROXY, CORRAL_HELPER_CHANBRIDGE,
};

/* NAME=PATH arguments: where meson builds each helper. */
static GHashTable *built;
/* intro-installed.json: file in the build or source tree → where `meson install` puts it. */
static GHashTable *installed;
static char *build_dir;
static char *source_dir;

/* A program that is not in the build tree, as an installed corralctl is. */
#define INSTALLED_EXE "/nonexistent-prefix/bin/corralctl"

static char *
env_name (const char *helper)
{
        g_autofree char *upper = g_ascii_strup (helper + strlen ("corral-"), -1);

        return g_strdup_printf ("CORRAL_%s_PATH", upper);
}

static void
load_installed (void)
{
        g_autofree char *path =
                g_build_filename (build_dir, "meson-info", "intro-installed.json", NULL);
        g_autofree char *text = NULL;
        g_autoptr (GError) error = NULL;
        cJSON *root;
        cJSON *item;

        g_file_get_contents (path, &text, NULL, &error);
        g_assert_no_error (error);
        root = cJSON_Parse (text);
        g_assert_nonnull (root);
        installed = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
        cJSON_ArrayForEach (item, root) {
                g_assert_true (cJSON_IsString (item));
                g_hash_table_insert (installed, g_strdup (item->string),
                                     g_strdup (item->valuestring));
        }
        cJSON_Delete (root);
}

/* The test runs from the build tree: with no variable set, each helper is the one this tree
 * builds. */
static void
test_build_tree (void)
{
        g_assert_true (corral_paths_in_build_tree ());
        for (gsize i = 0; i < G_N_ELEMENTS (helper_names); i++) {
                const char *want = g_hash_table_lookup (built, helper_names[i]);

                g_assert_nonnull (want);
                g_assert_cmpstr (corral_paths_helper (helper_names[i]), ==, want);
                g_assert_true (g_file_test (want, G_FILE_TEST_IS_EXECUTABLE));
        }
        g_assert_cmpstr (corral_paths_image_recipes (), ==, source_dir);
}

/* Installed: each helper is where `meson install` puts it, which is under libexecdir/corral. */
static void
test_installed (void)
{
        for (gsize i = 0; i < G_N_ELEMENTS (helper_names); i++) {
                const char *got = _corral_paths_helper_for (helper_names[i], INSTALLED_EXE);
                const char *dest = g_hash_table_lookup (
                        installed, g_hash_table_lookup (built, helper_names[i]));
                g_autofree char *dir = g_path_get_dirname (got);

                g_assert_nonnull (dest);
                g_assert_cmpstr (got, ==, dest);
                g_assert_true (g_str_has_suffix (dir, "/corral"));
        }
}

/* The image recipes and the data files they read are installed as the source tree holds them,
 * below the folder the lookup names. */
static void
test_installed_recipes (void)
{
        static const char *const files[] = {
                "guest-image/minimal/build-minimal",   "guest-image/minimal/init",
                "guest-image/minimal/verify-manifest", "guest-image/standard/build-standard",
                "guest-image/standard/init",           "guest-image/standard/stage1-init",
                "guest-image/standard/standard.json",
        };
        const char *recipes = _corral_paths_image_recipes_for (INSTALLED_EXE);

        g_assert_cmpstr (recipes, !=, source_dir);
        for (gsize i = 0; i < G_N_ELEMENTS (files); i++) {
                g_autofree char *src = g_build_filename (source_dir, files[i], NULL);
                g_autofree char *want = g_build_filename (recipes, files[i], NULL);

                g_assert_cmpstr (g_hash_table_lookup (installed, src), ==, want);
        }
}

/* The schema: the build tree's compiled one here, the installed one's folder otherwise. */
static void
test_schema (void)
{
        g_autofree char *src =
                g_build_filename (source_dir, "data", "org.corral.Corral.gschema.xml", NULL);
        const char *dest = g_hash_table_lookup (installed, src);
        g_autofree char *compiled =
                g_build_filename (corral_paths_schema_dir (), "gschemas.compiled", NULL);

        g_assert_nonnull (dest);
        g_assert_true (g_file_test (compiled, G_FILE_TEST_EXISTS));
        g_assert_true (g_str_has_suffix (dest, "/glib-2.0/schemas/org.corral.Corral.gschema.xml"));
}

/* $CORRAL_<NAME>_PATH wins over both, installed or not. */
static void
test_environment (void)
{
        for (gsize i = 0; i < G_N_ELEMENTS (helper_names); i++) {
                g_autofree char *var = env_name (helper_names[i]);
                g_autofree char *value = g_strdup_printf ("/elsewhere/%s", helper_names[i]);

                g_setenv (var, value, TRUE);
                g_assert_cmpstr (corral_paths_helper (helper_names[i]), ==, value);
                g_assert_cmpstr (_corral_paths_helper_for (helper_names[i], INSTALLED_EXE), ==,
                                 value);
                /* Set but empty is not set. */
                g_setenv (var, "", TRUE);
                g_assert_cmpstr (corral_paths_helper (helper_names[i]), ==,
                                 g_hash_table_lookup (built, helper_names[i]));
                g_unsetenv (var);
        }
        g_setenv ("CORRAL_SOURCE_DIR", "/elsewhere/src", TRUE);
        g_assert_cmpstr (corral_paths_image_recipes (), ==, "/elsewhere/src");
        g_unsetenv ("CORRAL_SOURCE_DIR");
}

/* Only a program below the build tree's own folder is "in the build tree": not one in a
 * sibling whose name merely starts the same, nor the folder's parent. */
static void
test_not_a_prefix_match (void)
{
        g_autofree char *sibling = g_strconcat (build_dir, "-other/app/corralctl", NULL);
        g_autofree char *parent = g_path_get_dirname (build_dir);
        g_autofree char *beside = g_build_filename (parent, "corralctl", NULL);
        const char *installed_fsd = _corral_paths_helper_for (CORRAL_HELPER_FSD, INSTALLED_EXE);

        g_assert_cmpstr (_corral_paths_helper_for (CORRAL_HELPER_FSD, sibling), ==, installed_fsd);
        g_assert_cmpstr (_corral_paths_helper_for (CORRAL_HELPER_FSD, beside), ==, installed_fsd);
        g_assert_cmpstr (_corral_paths_helper_for (CORRAL_HELPER_FSD, NULL), ==, installed_fsd);
}

int
main (int argc, char **argv)
{
        g_test_init (&argc, &argv, NULL);

        built = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
        for (int i = 1; i < argc; i++) {
                g_auto (GStrv) kv = g_strsplit (argv[i], "=", 2);

                if (kv[0] && kv[1])
                        g_hash_table_insert (built, g_strdup (kv[0]), g_strdup (kv[1]));
        }
        /* The suite's environment points at the build tree with variables; this test is about
         * what happens without them. */
        build_dir = g_strdup (g_getenv ("CORRAL_BUILD_DIR"));
        source_dir = g_strdup (g_getenv ("CORRAL_SOURCE_DIR"));
        g_assert_nonnull (build_dir);
        g_assert_nonnull (source_dir);
        g_unsetenv ("CORRAL_SOURCE_DIR");
        for (gsize i = 0; i < G_N_ELEMENTS (helper_names); i++) {
                g_autofree char *var = env_name (helper_names[i]);

                g_unsetenv (var);
        }
        load_installed ();

        g_test_add_func ("/paths/build-tree", test_build_tree);
        g_test_add_func ("/paths/installed", test_installed);
        g_test_add_func ("/paths/installed-recipes", test_installed_recipes);
        g_test_add_func ("/paths/schema", test_schema);
        g_test_add_func ("/paths/environment", test_environment);
        g_test_add_func ("/paths/not-a-prefix-match", test_not_a_prefix_match);
        return g_test_run ();
}
