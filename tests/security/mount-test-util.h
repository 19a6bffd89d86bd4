/* mount-test-util.h — what the shared-folder security tests check after every attack.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <glib.h>

/* The folder next to the share holds exactly `n_expected` entries and its "canary" file still
 * says "canary": nothing was created, changed or removed outside the share. */
static inline void
mount_test_assert_outside_untouched (const char *outside, guint n_expected)
{
        g_autofree char *canary = g_build_filename (outside, "canary", NULL);
        g_autofree char *text = NULL;
        g_autoptr (GDir) d = g_dir_open (outside, 0, NULL);
        guint n = 0;

        g_assert_nonnull (d);
        g_assert_true (g_file_get_contents (canary, &text, NULL, NULL));
        g_assert_cmpstr (text, ==, "canary");
        while (g_dir_read_name (d))
                n++;
        g_assert_cmpuint (n, ==, n_expected);
}
