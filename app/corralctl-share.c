/* corralctl-share.c — shared folders of a VM from the command line.
 *
 *   corralctl share add VM PATH --mode ro|rw|rw-nodelete [--name NAME] [--protect PATTERN]...
 *   corralctl share ls VM
 *   corralctl share set VM NAME --mode ro|rw|rw-nodelete
 *   corralctl share rm VM NAME
 *
 * A running VM sees changes at once (its corral-fsd applies them); a stopped VM gets them at
 * its next start.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corralctl-share.h"

#include <glib/gi18n.h>
#include <stdio.h>
#include <string.h>

#include "corral-shares.h"
#include "corral-vm-host.h"
#include "corralctl-opts.h"
#include "corralctl-vm.h"
#include "corral-policy.h"

#define EXIT_CTL 125

static int
report (GError *error)
{
        g_printerr ("corralctl: %s\n", error->message);
        return EXIT_CTL;
}

static const CorralctlCommand share_commands[] = {
        { "add", N_ ("VM PATH"), 2, N_ ("Share a folder of this computer with a VM") },
        { "ls", N_ ("VM"), 1, N_ ("List a VM's shared folders and their modes") },
        { "set", N_ ("VM NAME"), 2, N_ ("Change what a VM may do in a shared folder") },
        { "rm", N_ ("VM NAME"), 2, N_ ("Stop sharing a folder (its files are not touched)") },
};

static const char *
share_footer (void)
{
        return _ ("Modes: ro = can read, rw = can edit, rw-nodelete = can edit but not delete.");
}

static gboolean
parse_mode (const char *text, FsMode *ret, GError **error)
{
        if (text && fs_mode_parse (text, ret))
                return TRUE;
        g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                     _ ("“%s” is not a sharing mode: use ro (can read), rw (can edit) or "
                        "rw-nodelete (can edit, but not delete)"),
                     text ? text : "");
        return FALSE;
}

gboolean
corralctl_share_ensure (const char *vm_dir)
{
        g_autoptr (GError) error = NULL;
        g_autofree char *port = g_build_filename (vm_dir, "fs.sock", NULL);

        if (!g_file_test (port, G_FILE_TEST_EXISTS))
                return FALSE;
        if (corral_shares_ensure_server (vm_dir, &error))
                return TRUE;
        g_printerr ("corralctl: shared folders are unavailable: %s\n", error->message);
        return FALSE;
}

gboolean
corralctl_share_parse_spec (const char *spec, char **ret_path, FsMode *ret_mode, GError **error)
{
        const char *colon = strrchr (spec, ':');

        if (!colon) {
                g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                             _ ("--share %s: expected PATH:MODE, such as ~/Documents:ro"), spec);
                return FALSE;
        }
        if (!parse_mode (colon + 1, ret_mode, error))
                return FALSE;
        g_autofree char *path = g_strndup (spec, (gsize) (colon - spec));
        /* Relative to the current folder, as the shell means it. */
        *ret_path = g_canonicalize_filename (path, NULL);
        return TRUE;
}

char *
corralctl_vm_dir (const char *vm, GError **error)
{
        g_autoptr (CorralHostSelection) sel = corral_host_select_default (error);

        if (!sel)
                return NULL;
        if (!*vm || strchr (vm, '/') || g_str_equal (vm, ".") || g_str_equal (vm, "..")) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                             _ ("“%s” is not a VM name"), vm);
                return NULL;
        }
        return g_build_filename (sel->state_dir, "vms", vm, NULL);
}

/* The VM's folder, from the host selection alone: share commands never need libvirt (the file
 * server and shares.json are all in the folder). */
static char *
vm_dir_for (const char *vm, GError **error)
{
        g_autofree char *dir = corralctl_vm_dir (vm, error);

        if (!dir)
                return NULL;
        if (!g_file_test (dir, G_FILE_TEST_IS_DIR)) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                             _ ("There is no VM named “%s” (see “corralctl vm ls”)"), vm);
                return NULL;
        }
        return g_steal_pointer (&dir);
}

/* What the organisation's policy protects in every share (it applies from the file server's
 * next start); a damaged policy is said, as the server will refuse to start with it. */
static void
print_managed (void)
{
        const char *path = corral_policy_default_path ();
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralPolicy) policy = corral_policy_load (path, &error);
        const char *const *managed = NULL;
        g_autofree char *list = NULL;

        if (!policy) {
                g_printerr ("%s\n", error->message);
                return;
        }
        if (!corral_policy_get_strv (policy, "sharedFolders.protectedPaths", &managed, NULL) ||
            !managed[0])
                return;
        list = g_strjoinv (", ", (char **) managed);
        g_print (_ ("Read-only in every shared folder by your organisation’s policy (%s): %s\n"),
                 path, list);
}

static int
cmd_ls (const char *vm_dir)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (GPtrArray) shares = corral_shares_list (vm_dir, &error);

        if (!shares)
                return report (error);
        g_print ("%-20s %-12s %s\n", "NAME", "MODE", "FOLDER");
        for (guint i = 0; i < shares->len; i++) {
                const CorralShare *s = shares->pdata[i];
                g_autofree char *extra = g_strjoinv (", ", s->protect);
                g_print ("%-20s %-12s %s%s%s%s\n", s->name, fs_mode_to_string (s->mode), s->path,
                         extra[0] ? " (also protected: " : "", extra, extra[0] ? ")" : "");
        }
        print_managed ();
        return 0;
}

int
corralctl_share_main (int argc, char **argv)
{
        g_autofree char *mode_text = NULL, *name = NULL;
        g_auto (GStrv) protect = NULL;
        const GOptionEntry add_entries[] = {
                { "mode", 0, 0, G_OPTION_ARG_STRING, &mode_text,
                  N_ ("ro (can read), rw (can edit) or rw-nodelete (can edit, but not delete)"),
                  N_ ("MODE") },
                { "name", 0, 0, G_OPTION_ARG_STRING, &name,
                  N_ ("The name under /workspace (default: the folder's own)"), N_ ("NAME") },
                { "protect", 0, 0, G_OPTION_ARG_STRING_ARRAY, &protect,
                  N_ ("A path the VM may read but never change (repeatable)"), N_ ("PATTERN") },
                G_OPTION_ENTRY_NULL
        };
        const GOptionEntry set_entries[] = { add_entries[0], G_OPTION_ENTRY_NULL };
        g_autoptr (GError) error = NULL;
        g_autofree char *vm_dir = NULL, *given = NULL;
        const CorralctlCommand *command;
        const char *cmd;
        FsMode mode = FS_MODE_RO;
        gboolean running;

        if (argc < 2 || g_str_equal (argv[1], "--help") || g_str_equal (argv[1], "-h"))
                return corralctl_group_usage (argc < 2 ? stderr : stdout, "share", share_commands,
                                              G_N_ELEMENTS (share_commands), share_footer ());
        if (!(command = corralctl_group_lookup ("share", share_commands,
                                                G_N_ELEMENTS (share_commands), argv[1],
                                                share_footer ())))
                return EXIT_CTL;
        cmd = command->name;
        argc--;
        argv++;
        if (!corralctl_command_parse ("share", command,
                                      g_str_equal (cmd, "add")   ? add_entries
                                      : g_str_equal (cmd, "set") ? set_entries
                                                                 : NULL,
                                      &argc, &argv))
                return EXIT_CTL;
        if ((g_str_equal (cmd, "add") || g_str_equal (cmd, "set")) &&
            !parse_mode (mode_text, &mode, &error))
                return report (error);
        if (!(vm_dir = vm_dir_for (argv[1], &error)))
                return report (error);
        running = corralctl_share_ensure (vm_dir);

        if (g_str_equal (cmd, "ls"))
                return cmd_ls (vm_dir);
        if (g_str_equal (cmd, "add")) {
                if (!corral_shares_add (vm_dir, argv[2], mode, name, (const char *const *) protect,
                                        &given, &error))
                        return report (error);
                /* The file server may have started just now (a VM created without shares has
                 * none before): the next command must see this share (SECURITY.md F17). */
                if (running && !corral_shares_wait_mounted (vm_dir, CORRAL_SHARES_MOUNT_TIMEOUT_MS,
                                                            NULL, &error))
                        return report (error);
                g_print ("shared %s as /workspace/%s (%s)\n", argv[2], given,
                         fs_mode_describe (mode));
                return 0;
        }
        if (g_str_equal (cmd, "set")) {
                if (!corral_shares_set_mode (vm_dir, argv[2], mode, &error))
                        return report (error);
                g_print ("/workspace/%s: %s\n", argv[2], fs_mode_describe (mode));
                return 0;
        }
        if (!corral_shares_remove (vm_dir, argv[2], &error))
                return report (error);
        g_print ("/workspace/%s is no longer shared\n", argv[2]);
        return 0;
}
