/* corral-vm-pool-record.h — the warm pool's record on a libvirt domain: its state and, once
 * handed out, the name it answers to (an alias). Below both the VM manager (which resolves an
 * alias when a name has no domain of its own) and the pool (which writes the records), so
 * neither calls the other for it. Not installed.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <libvirt/libvirt.h>

#include "corral-vm-pool.h"

G_BEGIN_DECLS

typedef struct {
        CorralVmPoolState state;
        char *alias; /* only on a taken VM, and only a valid VM name */
} CorralPoolRecord;

/* Reads dom's pool record; BOOTING without one. Clears libvirt's last error. Free alias. */
void _corral_pool_record_read (virDomainPtr dom, CorralPoolRecord *record);
gboolean _corral_pool_record_write (virDomainPtr dom,
                                    CorralVmPoolState state,
                                    const char *alias,
                                    GError **error);

/* (transfer full) every pool domain on conn (the CORRAL_POOL_VM_PREFIX names). */
GPtrArray *_corral_pool_list_domains (virConnectPtr conn, GError **error);

/* The pool VM handed out under name (transfer full), or NULL. */
virDomainPtr _corral_pool_lookup_alias (virConnectPtr conn, const char *name);

G_END_DECLS
