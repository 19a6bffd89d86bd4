/* vm-test-util.h — what the VM tests share: giving up when VMs cannot run on a machine, and
 * the minimal image they boot.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <gio/gio.h>
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>

/* Exit 77 (meson's "skipped") when QEMU, libvirt or an image cannot be had here, unless
 * CORRAL_REQUIRE_VM=1 (tools/test sets it): where VMs are expected to run, not running them is
 * a failure, never a quiet skip. */
static inline void G_GNUC_NORETURN
vm_test_skip (const char *why)
{
        if (g_strcmp0 (g_getenv ("CORRAL_REQUIRE_VM"), "1") == 0) {
                printf ("FAIL: VMs are required here (CORRAL_REQUIRE_VM=1): %s\n", why);
                exit (1);
        }
        printf ("SKIP: %s\n", why);
        exit (77);
}

/* Running async calls to completion: pass vm_test_got_result with &res (NULL-initialised
 * GAsyncResult *), then vm_test_wait_for (&res) iterates the default main context until then. */
static inline void
vm_test_got_result (GObject *source, GAsyncResult *result, gpointer user_data)
{
        *(GAsyncResult **) user_data = g_object_ref (result);
}

static inline GAsyncResult *
vm_test_wait_for (GAsyncResult **slot)
{
        while (!*slot)
                g_main_context_iteration (NULL, TRUE);
        return *slot;
}

/* Removes a test's state folder: its VM folders and the embedded libvirt's root. Only after
 * the manager is closed and its VMs are gone; a failed run keeps it (console logs) to read. */
static inline void
vm_test_remove_state (const char *path)
{
        const char *argv[] = { "rm", "-rf", "--", path, NULL };

        g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, NULL, NULL, NULL,
                      NULL);
}

/* The minimal image's folder (built, or reused from the cache, by build-minimal). */
static inline char *
vm_test_build_minimal (void)
{
        const char *src = g_getenv ("CORRAL_SOURCE_DIR");
        const char *agent = g_getenv ("CORRAL_AGENT_PATH");
        g_autofree char *builder = NULL;
        g_autofree char *out = NULL;
        g_autoptr (GError) error = NULL;
        int status = 0;

        if (!src || !agent)
                vm_test_skip ("CORRAL_SOURCE_DIR and CORRAL_AGENT_PATH must be set (run through "
                              "meson)");
        builder = g_build_filename (src, "guest-image", "minimal", "build-minimal", NULL);
        const char *argv[] = { builder, "--agent", agent, NULL };
        if (!g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, &out,
                           NULL, &status, &error) ||
            !g_spawn_check_wait_status (status, &error))
                vm_test_skip ("could not build the minimal guest image (build-minimal failed)");
        return g_strstrip (g_steal_pointer (&out));
}
