/* corral-policy-audit.c — audit.keepDays: a VM's audit logs outlive the VM (see corral-policy.h).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-policy.h"

#include <errno.h>
#include <gio/gio.h>
#include <glib/gi18n.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>

/* The audit logs a VM's folder holds: the file server's and the egress proxy's. */
static const char *const audit_logs[] = { "audit.jsonl", "egress.jsonl" };

/* The locked audit.keepDays, or 0. */
static gint64
keep_days (CorralPolicy *policy)
{
        gint64 days = 0;
        CorralPolicySetting how;

        if (policy && corral_policy_get_int (policy, "audit.keepDays", &days, &how) && how.locked)
                return days;
        return 0;
}

char *
corral_policy_audit_archive_dir (const char *vm_dir)
{
        g_autofree char *vms = g_path_get_dirname (vm_dir);
        g_autofree char *state = g_path_get_dirname (vms);

        return g_build_filename (state, "audit", NULL);
}

gboolean
corral_policy_audit_keep (CorralPolicy *policy,
                          const char *vm_dir,
                          const char *vm_name,
                          GError **error)
{
        g_autofree char *archive = NULL, *dest = NULL, *stamp = NULL;
        g_autoptr (GDateTime) now = NULL;
        gboolean any = FALSE;

        /* An unreadable policy might have asked: kept, to be safe. */
        if (policy && !keep_days (policy))
                return TRUE;
        for (guint i = 0; i < G_N_ELEMENTS (audit_logs); i++) {
                g_autofree char *path = g_build_filename (vm_dir, audit_logs[i], NULL);
                any = any || g_file_test (path, G_FILE_TEST_IS_REGULAR);
        }
        if (!any)
                return TRUE;
        archive = corral_policy_audit_archive_dir (vm_dir);
        now = g_date_time_new_now_utc ();
        stamp = g_date_time_format (now, "%Y%m%dT%H%M%S");
        dest = g_strdup_printf ("%s/%s-%s", archive, vm_name, stamp);
        if (g_mkdir_with_parents (dest, 0700) < 0) {
                g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errno),
                             _ ("Cannot keep the audit logs of “%s” in %s, as your organisation "
                                "asks (audit.keepDays): %s"),
                             vm_name, dest, g_strerror (errno));
                return FALSE;
        }
        for (guint i = 0; i < G_N_ELEMENTS (audit_logs); i++) {
                g_autofree char *from = g_build_filename (vm_dir, audit_logs[i], NULL);
                g_autofree char *to = g_build_filename (dest, audit_logs[i], NULL);

                if (g_rename (from, to) < 0 && errno != ENOENT) {
                        g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errno),
                                     _ ("Cannot keep the audit log %s, as your organisation asks "
                                        "(audit.keepDays): %s"),
                                     from, g_strerror (errno));
                        return FALSE;
                }
        }
        return TRUE;
}

guint
corral_policy_audit_prune (CorralPolicy *policy, const char *archive, GStrv *removed)
{
        g_autoptr (GDir) d = NULL;
        g_autoptr (GStrvBuilder) names = g_strv_builder_new ();
        gint64 days = keep_days (policy);
        gint64 cutoff;
        const char *entry;
        guint n = 0;

        /* Without the organisation's rule nothing is archived, and nothing is pruned. */
        if (!days || !(d = g_dir_open (archive, 0, NULL)))
                goto out;
        cutoff = g_get_real_time () / G_USEC_PER_SEC - days * 24 * 3600;
        while ((entry = g_dir_read_name (d))) {
                g_autofree char *dir = g_build_filename (archive, entry, NULL);
                gint64 newest = 0;
                struct stat st;

                if (lstat (dir, &st) < 0 || !S_ISDIR (st.st_mode))
                        continue;
                /* Kept at least days after its last line. */
                for (guint i = 0; i < G_N_ELEMENTS (audit_logs); i++) {
                        g_autofree char *path = g_build_filename (dir, audit_logs[i], NULL);
                        struct stat fst;

                        if (lstat (path, &fst) == 0 && fst.st_mtime > newest)
                                newest = fst.st_mtime;
                }
                if (newest == 0)
                        newest = st.st_mtime;
                if (newest >= cutoff)
                        continue;
                for (guint i = 0; i < G_N_ELEMENTS (audit_logs); i++) {
                        g_autofree char *path = g_build_filename (dir, audit_logs[i], NULL);
                        g_unlink (path);
                }
                if (g_rmdir (dir) == 0) {
                        g_strv_builder_add (names, dir);
                        n++;
                }
        }
out:
        if (removed)
                *removed = g_strv_builder_end (names);
        return n;
}
