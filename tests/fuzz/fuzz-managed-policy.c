/* fuzz-managed-policy.c — libFuzzer target for one managed policy file (corral-policy.h) as
 * the file server uses it: a file IT writes and Corral reads as untrusted input. Whatever
 * loads must give protected and hidden paths the file server accepts and a folder check that
 * answers; whatever does not must say why. (Several files merged: fuzz-managed-policy-merge.)
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-policy.h"
#include "fs-paths.h"

#include <gio/gio.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralPolicy) policy = NULL;
        g_autoptr (FsPathRules) check = NULL;
        const char *origin = "/etc/corral/managed.json";
        const char *text = (const char *) data;
        gsize len = size;
        const char *const *protect = NULL, *const *hide = NULL;
        FsMode max = FS_MODE_RW;

        policy = corral_policy_parse_texts (1, &origin, &text, &len, &error);
        if (!policy) {
                g_assert_nonnull (error);
                g_assert_nonnull (strstr (error->message, origin));
                return 0;
        }
        g_assert_no_error (error);
        corral_policy_get_strv (policy, "sharedFolders.protectedPaths", &protect, NULL);
        corral_policy_get_strv (policy, "sharedFolders.hiddenPaths", &hide, NULL);
        g_assert_true (!protect || g_strv_length ((char **) protect) <= CORRAL_POLICY_MAX_ITEMS);
        g_assert_true (!hide || g_strv_length ((char **) hide) <= CORRAL_POLICY_MAX_ITEMS);
        check = fs_path_rules_new (protect, hide, NULL);
        g_assert_nonnull (check);
        if (!corral_policy_check_share (policy, "/home/person/Documents", FS_MODE_RW, &max, &error))
                g_assert_error (error, CORRAL_POLICY_ERROR, CORRAL_POLICY_ERROR_BLOCKED);
        return 0;
}
