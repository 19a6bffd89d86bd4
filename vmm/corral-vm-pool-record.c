/* corral-vm-pool-record.c — the warm pool's record on a domain (corral-vm-pool-record.h).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-vm-pool-record.h"
#include "corral-vm-private.h"

#include "corral-domain-xml.h"

#include <libvirt/virterror.h>
#include <string.h>

#define POOL_DOMAIN_PREFIX CORRAL_DOMAIN_PREFIX CORRAL_POOL_VM_PREFIX

const char *
corral_vm_pool_state_to_string (CorralVmPoolState state)
{
        switch (state) {
        case CORRAL_VM_POOL_IDLE:
                return "idle";
        case CORRAL_VM_POOL_TAKEN:
                return "taken";
        case CORRAL_VM_POOL_BOOTING:
        default:
                return "booting";
        }
}

static void
pool_meta_start (GMarkupParseContext *context,
                 const char *element,
                 const char **names,
                 const char **values,
                 gpointer user_data,
                 GError **error)
{
        CorralPoolRecord *meta = user_data;
        const char *colon = strchr (element, ':');

        if (strcmp (colon ? colon + 1 : element, "pool") != 0)
                return;
        for (gsize i = 0; names[i]; i++) {
                if (strcmp (names[i], "state") == 0) {
                        if (strcmp (values[i], "idle") == 0)
                                meta->state = CORRAL_VM_POOL_IDLE;
                        else if (strcmp (values[i], "taken") == 0)
                                meta->state = CORRAL_VM_POOL_TAKEN;
                } else if (strcmp (names[i], "alias") == 0 && !meta->alias) {
                        meta->alias = g_strdup (values[i]);
                }
        }
}

void
_corral_pool_record_read (virDomainPtr dom, CorralPoolRecord *meta)
{
        static const GMarkupParser parser = { pool_meta_start, NULL, NULL, NULL, NULL };
        g_autofree char *xml = NULL;
        g_autoptr (GMarkupParseContext) ctx = NULL;
        meta->state = CORRAL_VM_POOL_BOOTING;
        meta->alias = NULL;
        xml = virDomainGetMetadata (dom, VIR_DOMAIN_METADATA_ELEMENT, CORRAL_POOL_METADATA_NS, 0);
        if (xml && strlen (xml) < 4096) {
                ctx = g_markup_parse_context_new (&parser, 0, meta, NULL);
                if (!g_markup_parse_context_parse (ctx, xml, -1, NULL) ||
                    !g_markup_parse_context_end_parse (ctx, NULL))
                        meta->state = CORRAL_VM_POOL_BOOTING;
        }
        /* Whatever the metadata says, only a valid VM name is an alias. */
        if (meta->alias) {
                g_autofree char *dname = g_strconcat (CORRAL_DOMAIN_PREFIX, meta->alias, NULL);
                if (meta->state != CORRAL_VM_POOL_TAKEN || !corral_domain_name_is_valid (dname))
                        g_clear_pointer (&meta->alias, g_free);
        }
        virResetLastError ();
}

gboolean
_corral_pool_record_write (virDomainPtr dom,
                           CorralVmPoolState state,
                           const char *alias,
                           GError **error)
{
        g_autofree char *xml =
                alias ? g_markup_printf_escaped ("<pool state=\"%s\" alias=\"%s\"/>",
                                                 corral_vm_pool_state_to_string (state), alias)
                      : g_markup_printf_escaped ("<pool state=\"%s\"/>",
                                                 corral_vm_pool_state_to_string (state));

        if (virDomainSetMetadata (dom, VIR_DOMAIN_METADATA_ELEMENT, xml,
                                  CORRAL_POOL_METADATA_PREFIX, CORRAL_POOL_METADATA_NS,
                                  VIR_DOMAIN_AFFECT_LIVE | VIR_DOMAIN_AFFECT_CONFIG) < 0) {
                _corral_vm_set_libvirt_error (error, CORRAL_VM_ERROR_FAILED,
                                              "recording the pool state failed");
                return FALSE;
        }
        return TRUE;
}

static void
dom_unref (gpointer dom)
{
        virDomainFree (dom);
}

GPtrArray *
_corral_pool_list_domains (virConnectPtr conn, GError **error)
{
        virDomainPtr *doms = NULL;
        GPtrArray *out = g_ptr_array_new_with_free_func (dom_unref);
        int n = virConnectListAllDomains (conn, &doms, 0);

        if (n < 0) {
                _corral_vm_set_libvirt_error (error, CORRAL_VM_ERROR_FAILED, "listing VMs failed");
                g_ptr_array_unref (out);
                return NULL;
        }
        for (int i = 0; i < n; i++) {
                if (g_str_has_prefix (virDomainGetName (doms[i]), POOL_DOMAIN_PREFIX))
                        g_ptr_array_add (out, doms[i]);
                else
                        virDomainFree (doms[i]);
        }
        free (doms);
        return out;
}

virDomainPtr
_corral_pool_lookup_alias (virConnectPtr conn, const char *name)
{
        g_autoptr (GPtrArray) doms = _corral_pool_list_domains (conn, NULL);
        virDomainPtr found = NULL;

        for (guint i = 0; doms && i < doms->len && !found; i++) {
                CorralPoolRecord meta;

                _corral_pool_record_read (doms->pdata[i], &meta);
                if (meta.alias && strcmp (meta.alias, name) == 0)
                        found = g_ptr_array_steal_index (doms, i);
                g_free (meta.alias);
        }
        return found;
}
