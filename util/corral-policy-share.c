/* corral-policy-share.c — whether a folder may be shared in a mode under the organisation's
 * policy: one check for the file server (which enforces it) and the task service (which says
 * it before a workspace starts); and where the task audit logs are also copied.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-policy.h"

#include <glib/gi18n.h>

/* How wide a mode is, in the policy's order (ro < rw-nodelete < rw). */
static CorralPolicyMode
mode_rank (FsMode mode)
{
        switch (mode) {
        case FS_MODE_RO:
                return CORRAL_POLICY_MODE_RO;
        case FS_MODE_RW_NODELETE:
                return CORRAL_POLICY_MODE_RW_NODELETE;
        case FS_MODE_RW:
                return CORRAL_POLICY_MODE_RW;
        }
        g_return_val_if_reached (CORRAL_POLICY_MODE_RW);
}

static FsMode
mode_of_rank (CorralPolicyMode rank)
{
        return rank == CORRAL_POLICY_MODE_RO            ? FS_MODE_RO
               : rank == CORRAL_POLICY_MODE_RW_NODELETE ? FS_MODE_RW_NODELETE
                                                        : FS_MODE_RW;
}

gboolean
corral_policy_audit_copies_to (CorralPolicy *policy, const char *destination)
{
        const char *const *list = NULL;

        g_return_val_if_fail (policy != NULL && destination != NULL, FALSE);
        /* Applied locked or not: where the organisation's copies go is not the person's. */
        return corral_policy_get_strv (policy, "audit.copyTo", &list, NULL) &&
               g_strv_contains (list, destination);
}

gboolean
corral_policy_check_share (
        CorralPolicy *policy, const char *folder, FsMode mode, FsMode *ret_max_mode, GError **error)
{
        CorralPolicyMode max = CORRAL_POLICY_MODE_RW;
        g_autofree char *shown = NULL;

        g_return_val_if_fail (policy != NULL, FALSE);
        g_return_val_if_fail (folder != NULL && g_path_is_absolute (folder), FALSE);

        if (!corral_policy_max_mode_for_folder (policy, folder, &max, error))
                return FALSE;
        if (ret_max_mode)
                *ret_max_mode = mode_of_rank (max);
        if (mode_rank (mode) <= max)
                return TRUE;
        shown = g_filename_display_name (folder);
        g_set_error (error, CORRAL_POLICY_ERROR, CORRAL_POLICY_ERROR_BLOCKED,
                     /* Translators: a folder, then an access such as “Can edit, but not delete” */
                     _ ("The folder %s may be shared as “%s” at most (set by your organisation). "
                        "Choose that access, or another folder."),
                     shown, fs_mode_describe (mode_of_rank (max)));
        return FALSE;
}
