/* vm-test-skip.h — how the VM tests give up when VMs cannot run on a machine.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

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
