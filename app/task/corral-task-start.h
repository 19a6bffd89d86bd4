/* corral-task-start.h — the steps of starting a task that the desktop app and corralctl share,
 * so that the two cannot drift apart: the organisation's policy checked before anything is
 * built or booted, and a running VM's shares, file server and network proxy.
 *
 * Both functions block (files, child daemons): the app calls them from a worker thread.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <glib.h>

#include "egress-policy.h"
#include "corral-share-mode.h"

G_BEGIN_DECLS

typedef struct {
        const char *folder; /* a host path */
        FsMode mode;
} CorralTaskShare;

/* The managed policy (fs_managed_policy_path()) can be read and is valid. A damaged one would
 * stop the file server after the boot; the error names the file and who can fix it. */
gboolean corral_task_check_managed_policy (GError **error);

/* For the running VM in vm_dir: adds shares (n_shares of them), starts its file server, saves
 * policy as its network policy (NULL: keeps the one it has) and starts its network proxy. A
 * proxy that cannot start is an error, as a file server that cannot is: a task never runs
 * with less than it was given. A VM made without a shares port and given no share has no file
 * server to start. ret_names (nullable): each share's folder name under /workspace. Does not
 * wait for the guest to mount the shares. */
gboolean corral_task_start_services (const char *vm_dir,
                                     const CorralTaskShare *shares,
                                     gsize n_shares,
                                     CorralEgressPolicy *policy,
                                     GStrv *ret_names,
                                     GError **error);

G_END_DECLS
