/* corral-paths.c — see corral-paths.h.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-paths.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* Where meson builds each helper, relative to the build tree's root. tests/unit/test-paths
 * checks every line against the paths meson itself reports, so this cannot drift. */
static const struct {
        const char *name;
        const char *env;
        const char *build_path;
} helpers[] = {
        { CORRAL_HELPER_AGENT, "CORRAL_AGENT_PATH", "guest-image/agent/corral-agent" },
        { CORRAL_HELPER_FS, "CORRAL_FS_PATH", "mounts/client/corral-fs" },
        { CORRAL_HELPER_FSD, "CORRAL_FSD_PATH", "mounts/server/corral-fsd" },
        { CORRAL_HELPER_EGRESSD, "CORRAL_EGRESSD_PATH", "keychain-bridge/corral-egressd" },
        { CORRAL_HELPER_NETPROXY, "CORRAL_NETPROXY_PATH", "keychain-bridge/guest/corral-netproxy" },
        { CORRAL_HELPER_CHANBRIDGE, "CORRAL_CHANBRIDGE_PATH", "vmm/corral-chanbridge" },
};

/* The build tree's root with symlinks resolved (the kernel resolves /proc/self/exe too); when
 * it is gone (an installed Corral whose build tree was removed), a path no program lies under. */
static const char *
build_root (void)
{
        static gsize root;

        if (g_once_init_enter (&root)) {
                char buf[PATH_MAX];
                char *real = realpath (CORRAL_BUILD_ROOT, buf);

                g_once_init_leave (&root, (gsize) g_strdup (real ? real : "/nonexistent/"));
        }
        return (const char *) root;
}

static gboolean
exe_in_build_tree (const char *exe)
{
        const char *root = build_root ();
        size_t len = strlen (root);

        return exe != NULL && strncmp (exe, root, len) == 0 && exe[len] == '/';
}

gboolean
corral_paths_in_build_tree (void)
{
        static gsize decided;
        static gboolean inside;

        if (g_once_init_enter (&decided)) {
                g_autofree char *exe = g_file_read_link ("/proc/self/exe", NULL);

                inside = exe_in_build_tree (exe);
                g_once_init_leave (&decided, 1);
        }
        return inside;
}

static gssize
helper_index (const char *name)
{
        for (gsize i = 0; i < G_N_ELEMENTS (helpers); i++)
                if (g_str_equal (helpers[i].name, name))
                        return (gssize) i;
        return -1;
}

static const char *
helper_lookup (gssize i, gboolean inside)
{
        const char *env = g_getenv (helpers[i].env);
        g_autofree char *path = NULL;

        if (env && *env)
                return g_intern_string (env);
        if (inside)
                path = g_build_filename (build_root (), helpers[i].build_path, NULL);
        else
                path = g_build_filename (CORRAL_PKGLIBEXECDIR, helpers[i].name, NULL);
        return g_intern_string (path);
}

const char *
corral_paths_helper (const char *name)
{
        gssize i = helper_index (name);

        g_return_val_if_fail (i >= 0, NULL);
        return helper_lookup (i, corral_paths_in_build_tree ());
}

const char *
_corral_paths_helper_for (const char *name, const char *exe)
{
        gssize i = helper_index (name);

        g_return_val_if_fail (i >= 0, NULL);
        return helper_lookup (i, exe_in_build_tree (exe));
}

static const char *
image_recipes_lookup (gboolean inside)
{
        const char *env = g_getenv ("CORRAL_SOURCE_DIR");

        if (env && *env)
                return g_intern_string (env);
        return g_intern_static_string (inside ? CORRAL_SOURCE_ROOT : CORRAL_PKGDATADIR);
}

const char *
corral_paths_image_recipes (void)
{
        return image_recipes_lookup (corral_paths_in_build_tree ());
}

const char *
_corral_paths_image_recipes_for (const char *exe)
{
        return image_recipes_lookup (exe_in_build_tree (exe));
}

const char *
corral_paths_schema_dir (void)
{
        return corral_paths_in_build_tree () ? CORRAL_BUILD_ROOT "/data" : CORRAL_SCHEMA_DIR;
}

const char *
corral_paths_locale_dir (void)
{
        return corral_paths_in_build_tree () ? CORRAL_BUILD_ROOT "/po" : CORRAL_LOCALEDIR;
}
