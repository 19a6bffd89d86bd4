/* corralctl-share.h — `corralctl share add|ls|set|rm VM ...`.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <glib.h>

#include "corral-share-mode.h"

int corralctl_share_main (int argc, char **argv);

/* "PATH:MODE" of `vm create --share` (the mode after the last ':'). FALSE with an error. */
gboolean
corralctl_share_parse_spec (const char *spec, char **ret_path, FsMode *ret_mode, GError **error);

/* Starts the VM's file server if the VM runs; a message on stderr if it cannot. TRUE when a
 * server runs. */
gboolean corralctl_share_ensure (const char *vm_dir);

/* STATE/vms/VM for a VM name (refused when it is not one: empty, ".", "..", a "/"); the folder
 * need not exist. */
char *corralctl_vm_dir (const char *vm, GError **error);
