/* fuzz-managed-policy.c — libFuzzer target for the managed policy's shared-folder settings
 * (fs-managed.h): a file IT writes and Corral reads as untrusted input. Whatever parses must
 * give patterns the file server accepts; whatever does not must say why.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "fs-managed.h"
#include "fs-paths.h"

#include <gio/gio.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
        g_autoptr (GError) error = NULL;
        g_auto (GStrv) protect = NULL, hide = NULL;
        g_autoptr (FsPathRules) check = NULL;

        if (!fs_managed_parse ((const char *) data, size, "fuzz.json", &protect, &hide, &error)) {
                g_assert_nonnull (error);
                g_assert_null (protect);
                return 0;
        }
        g_assert_no_error (error);
        g_assert_cmpuint (g_strv_length (protect), <=, FS_MANAGED_MAX_PROTECTED);
        g_assert_cmpuint (g_strv_length (hide), <=, FS_MANAGED_MAX_PROTECTED);
        check = fs_path_rules_new ((const char *const *) protect, (const char *const *) hide, NULL);
        g_assert_nonnull (check);
        return 0;
}
