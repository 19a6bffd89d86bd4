/* corral-task-start.c — see corral-task-start.h.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-task-start.h"

#include "corral-egress-vm.h"
#include "corral-shares.h"
#include "fs-managed.h"

gboolean
corral_task_check_managed_policy (GError **error)
{
        g_auto (GStrv) protect = NULL;
        g_auto (GStrv) hide = NULL;

        return fs_managed_load_all (fs_managed_policy_path (), &protect, &hide, error);
}

gboolean
corral_task_start_services (const char *vm_dir,
                            const CorralTaskShare *shares,
                            gsize n_shares,
                            CorralEgressPolicy *policy,
                            GStrv *ret_names,
                            GError **error)
{
        g_autofree char *port = NULL;
        g_autoptr (GStrvBuilder) names = g_strv_builder_new ();

        g_return_val_if_fail (vm_dir != NULL, FALSE);
        g_return_val_if_fail (shares != NULL || n_shares == 0, FALSE);

        for (gsize i = 0; i < n_shares; i++) {
                g_autofree char *name = NULL;

                if (!corral_shares_add (vm_dir, shares[i].folder, shares[i].mode, NULL, NULL, &name,
                                        error))
                        return FALSE;
                g_strv_builder_add (names, name);
        }
        port = g_build_filename (vm_dir, "fs.sock", NULL);
        if ((n_shares > 0 || g_file_test (port, G_FILE_TEST_EXISTS)) &&
            !corral_shares_ensure_server (vm_dir, error))
                return FALSE;
        if (policy) {
                g_autofree char *path = g_build_filename (vm_dir, "egress-policy.json", NULL);

                if (!corral_egress_policy_save_file (policy, path, error))
                        return FALSE;
        }
        /* Started before the caller waits for the mounts: the guest's proxy sets up its session
         * meanwhile. */
        if (!corral_egress_vm_ensure (vm_dir, error))
                return FALSE;
        if (ret_names)
                *ret_names = g_strv_builder_end (names);
        return TRUE;
}
