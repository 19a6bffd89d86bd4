/* corralctl-gc.c — garbage collection of VM folders and cached images (see the header).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corralctl-gc.h"

#include "corral-image.h"
#include "corral-policy.h"
#include "corral-vm-host.h"
#include "corral-vm-gc.h"
#include "corral-vm-manager.h"
#include "corralctl-opts.h"
#include "corralctl-vm.h"

#include <glib/gi18n.h>
#include <stdio.h>

#define EXIT_CTL 125

int
corralctl_gc_main (int argc, char **argv)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (CorralVmManager) m = NULL;
        g_autoptr (GPtrArray) items = NULL;
        g_autofree char *images = corral_image_cache_dir ();
        g_autofree char *total_str = NULL;
        gboolean dry_run = FALSE;
        guint64 total = 0;
        int failures = 0;

        const GOptionEntry entries[] = { { "dry-run", 'n', 0, G_OPTION_ARG_NONE, &dry_run,
                                           N_ ("Only say what would be removed"), NULL },
                                         G_OPTION_ENTRY_NULL };

        if (!corralctl_options_parse ("gc", "",
                                      _ ("Delete VM folders without a VM and images no VM uses"),
                                      entries, &argc, &argv))
                return EXIT_CTL;
        if (argc > 1)
                return corralctl_usage_error ("gc", _ ("no arguments"));
        corral_vm_manager_quiet_libvirt_logs ();
        if (!(m = corralctl_vm_open_manager (&error))) {
                g_printerr ("corralctl: %s\n", error->message);
                return EXIT_CTL;
        }
        corral_vm_manager_gc_select_async (m, images, NULL, corralctl_got_result, &res);
        if (!(items = corral_vm_manager_gc_select_finish (m, corralctl_wait_for (&res), &error))) {
                g_printerr ("corralctl: %s\n", error->message);
                return EXIT_CTL;
        }
        for (guint i = 0; i < items->len; i++) {
                CorralGcItem *item = items->pdata[i];
                g_autofree char *size = g_format_size (item->bytes);
                g_autoptr (GError) rm_error = NULL;

                if (!dry_run && !corral_vm_manager_gc_remove (m, item, &rm_error)) {
                        g_printerr ("corralctl: %s\n", rm_error->message);
                        failures++;
                        continue;
                }
                total += item->bytes;
                g_print ("%s %9s  %s  (%s)\n", dry_run ? "would remove" : "removed", size,
                         item->path, item->reason);
        }
        /* The audit logs kept after their VMs (audit.keepDays), once old enough. */
        if (!dry_run) {
                g_autoptr (CorralPolicy) policy = corral_policy_load_default (NULL);
                CorralHostFacts facts;
                g_autofree char *state = NULL, *vms = NULL, *archive = NULL;
                g_auto (GStrv) removed = NULL;

                corral_host_facts_probe (&facts, &state);
                vms = g_build_filename (state, "vms", "x", NULL);
                archive = corral_policy_audit_archive_dir (vms);
                if (policy && corral_policy_audit_prune (policy, archive, &removed) > 0)
                        for (guint i = 0; removed[i]; i++)
                                g_print (_ ("removed audit logs %s (older than your "
                                            "organisation keeps them, audit.keepDays)\n"),
                                         removed[i]);
        }
        total_str = g_format_size (total);
        g_print ("%s %s in %u item%s\n", dry_run ? "would free" : "freed", total_str,
                 items->len - failures, items->len - failures == 1 ? "" : "s");
        return failures ? EXIT_CTL : 0;
}
