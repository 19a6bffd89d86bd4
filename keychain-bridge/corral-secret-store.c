/* corral-secret-store.c — secrets in the Secret Service (see corral-secret-store.h).
 *
 * The SecretService API is used directly, not secret_password_*: those would try to unlock a
 * locked collection with a prompt (which hangs without a desktop) and, in some libsecret builds,
 * can use a file backend. Here a locked collection or item is an error, and only D-Bus is used.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-secret-store.h"

#include <glib/gi18n.h>
#include <libsecret/secret.h>
#include <string.h>

static const SecretSchema corral_schema = {
        "org.corral.Secret",
        SECRET_SCHEMA_NONE,
        {
                { "corral-name", SECRET_SCHEMA_ATTRIBUTE_STRING },
                { "corral-hosts", SECRET_SCHEMA_ATTRIBUTE_STRING },
                { "corral-header", SECRET_SCHEMA_ATTRIBUTE_STRING },
                { "corral-format", SECRET_SCHEMA_ATTRIBUTE_STRING },
                { NULL, 0 },
        },
};

gboolean
corral_secret_name_is_host_only (const char *name)
{
        return g_strcmp0 (name, "anthropic") == 0 || g_strcmp0 (name, "openai") == 0;
}

void
corral_secret_info_free (CorralSecretInfo *info)
{
        if (!info)
                return;
        g_free (info->name);
        g_strfreev (info->hosts);
        g_free (info->header);
        g_free (info->format);
        g_free (info);
}

void
corral_secret_value_free (char *value)
{
        if (!value)
                return;
        explicit_bzero (value, strlen (value));
        g_free (value);
}

static gboolean
invalid (GError **error, const char *message)
{
        g_set_error_literal (error, CORRAL_EGRESS_ERROR, CORRAL_EGRESS_ERROR_INVALID, message);
        return FALSE;
}

static gboolean
valid_name (const char *name)
{
        gsize n = strlen (name);

        if (n == 0 || n > CORRAL_SECRET_MAX_NAME || g_ascii_isdigit (name[0]))
                return FALSE;
        for (gsize i = 0; i < n; i++)
                if (!g_ascii_isalnum (name[i]) && name[i] != '_')
                        return FALSE;
        return TRUE;
}

static gboolean
valid_header (const char *h)
{
        if (!*h || strlen (h) > 64)
                return FALSE;
        for (const char *p = h; *p; p++)
                if (!g_ascii_isalnum (*p) && *p != '-')
                        return FALSE;
        /* Headers the proxy itself owns cannot carry a secret. */
        return g_ascii_strcasecmp (h, "host") != 0 && g_ascii_strcasecmp (h, "content-length") &&
               g_ascii_strcasecmp (h, "transfer-encoding") && g_ascii_strcasecmp (h, "connection");
}

static gboolean
valid_format (const char *f)
{
        const char *hole = strstr (f, "{}");

        if (!hole || strstr (hole + 2, "{}") || strlen (f) > 256)
                return FALSE;
        for (const char *p = f; *p; p++)
                if ((guchar) *p < 0x20 || *p == 0x7f)
                        return FALSE;
        return TRUE;
}

CorralSecretInfo *
corral_secret_info_new (const char *name,
                        const char *const *hosts,
                        const char *header,
                        const char *format,
                        GError **error)
{
        g_autoptr (CorralSecretInfo) info = NULL;
        g_autoptr (GPtrArray) list = NULL;

        g_return_val_if_fail (name != NULL, NULL);
        g_return_val_if_fail (header != NULL, NULL);
        g_return_val_if_fail (format != NULL, NULL);

        info = g_new0 (CorralSecretInfo, 1);
        list = g_ptr_array_new_with_free_func (g_free);
        if (!valid_name (name)) {
                invalid (error, _ ("A secret name is 1 to 64 letters, digits or _, not starting "
                                   "with a digit (it becomes an environment variable)"));
                return NULL;
        }
        for (const char *const *h = hosts; h && *h; h++) {
                g_autofree char *canon = NULL;
                CorralHostKind kind;
                guint16 port;

                if (!corral_egress_parse_authority (*h, -1, CORRAL_SECRET_DEFAULT_PORT, &kind,
                                                    &canon, &port, error))
                        return NULL;
                if (kind != CORRAL_HOST_NAME) {
                        invalid (error, _ ("A secret is bound to host names, not addresses"));
                        return NULL;
                }
                g_ptr_array_add (list, port == CORRAL_SECRET_DEFAULT_PORT
                                               ? g_steal_pointer (&canon)
                                               : g_strdup_printf ("%s:%u", canon, port));
        }
        if (list->len == 0 || list->len > 16) {
                invalid (error, _ ("A secret needs one to 16 hosts (--host)"));
                return NULL;
        }
        g_ptr_array_add (list, NULL);
        if (!valid_header (header) || !valid_format (format)) {
                invalid (error, _ ("Invalid header name or format (the format needs one “{}”)"));
                return NULL;
        }
        info->name = g_strdup (name);
        info->hosts = (char **) g_ptr_array_free (g_steal_pointer (&list), FALSE);
        info->header = g_ascii_strdown (header, -1);
        info->format = g_strdup (format);
        return g_steal_pointer (&info);
}

/* Keychain access ------------------------------------------------------------------------------ */

static gboolean
keychain_error (GError **error, GError *cause)
{
        g_set_error (error, CORRAL_EGRESS_ERROR, CORRAL_EGRESS_ERROR_KEYCHAIN,
                     _ ("The desktop keychain is not available (%s). Corral keeps secrets only "
                        "there: start or unlock your keychain (for example by logging in to the "
                        "desktop) and try again."),
                     cause ? cause->message : _ ("no Secret Service"));
        return FALSE;
}

static gboolean
locked_error (GError **error)
{
        g_set_error_literal (error, CORRAL_EGRESS_ERROR, CORRAL_EGRESS_ERROR_KEYCHAIN,
                             _ ("The desktop keychain is locked. Unlock it (for example in "
                                "Passwords and Keys, or by logging in again) and try again; "
                                "Corral never stores secrets anywhere else."));
        return FALSE;
}

static SecretService *
get_service (GCancellable *cancellable, GError **error)
{
        g_autoptr (GError) local = NULL;
        SecretService *service =
                secret_service_get_sync (SECRET_SERVICE_OPEN_SESSION, cancellable, &local);

        if (!service)
                keychain_error (error, local);
        return service;
}

static GHashTable *
name_attributes (const char *name)
{
        GHashTable *attrs = g_hash_table_new (g_str_hash, g_str_equal);

        if (name)
                g_hash_table_insert (attrs, (gpointer) "corral-name", (gpointer) name);
        return attrs;
}

static GList *
search (SecretService *service,
        const char *name,
        SecretSearchFlags flags,
        GCancellable *cancellable,
        GError **error)
{
        g_autoptr (GHashTable) attrs = name_attributes (name);
        g_autoptr (GError) local = NULL;
        GList *items = secret_service_search_sync (service, &corral_schema, attrs,
                                                   flags | SECRET_SEARCH_ALL, cancellable, &local);

        if (local) {
                keychain_error (error, local);
                return NULL;
        }
        return items;
}

static gboolean
any_locked (GList *items)
{
        for (GList *l = items; l; l = l->next)
                if (secret_item_get_locked (l->data))
                        return TRUE;
        return FALSE;
}

static void
free_items (GList *items)
{
        g_list_free_full (items, g_object_unref);
}

static gboolean
remove_items (GList *items, GCancellable *cancellable, GError **error)
{
        for (GList *l = items; l; l = l->next) {
                g_autoptr (GError) local = NULL;

                if (!secret_item_delete_sync (l->data, cancellable, &local))
                        return keychain_error (error, local);
        }
        return TRUE;
}

gboolean
corral_secret_store_set_sync (const CorralSecretInfo *info,
                              const char *value,
                              GCancellable *cancellable,
                              GError **error)
{
        g_autoptr (SecretService) service = NULL;
        g_autoptr (SecretCollection) coll = NULL;
        g_autoptr (GError) local = NULL;
        g_autoptr (GHashTable) attrs = NULL;
        g_autoptr (SecretValue) secret = NULL;
        g_autoptr (SecretItem) item = NULL;
        g_autofree char *hosts = g_strjoinv (",", info->hosts);
        g_autofree char *label = g_strdup_printf ("Corral secret %s", info->name);
        GList *old;

        if (!*value || strlen (value) > CORRAL_SECRET_MAX_VALUE || strpbrk (value, "\r\n"))
                return invalid (error, _ ("A secret value is 1 to 8192 bytes on one line"));
        if (!(service = get_service (cancellable, error)))
                return FALSE;
        coll = secret_collection_for_alias_sync (service, SECRET_COLLECTION_DEFAULT,
                                                 SECRET_COLLECTION_NONE, cancellable, &local);
        if (!coll)
                return keychain_error (error, local);
        if (secret_collection_get_locked (coll))
                return locked_error (error);
        old = search (service, info->name, SECRET_SEARCH_NONE, cancellable, &local);
        if (local || any_locked (old)) {
                free_items (old);
                return local ? keychain_error (error, local) : locked_error (error);
        }
        if (!remove_items (old, cancellable, error)) {
                free_items (old);
                return FALSE;
        }
        free_items (old);
        attrs = name_attributes (info->name);
        g_hash_table_insert (attrs, (gpointer) "corral-hosts", hosts);
        g_hash_table_insert (attrs, (gpointer) "corral-header", info->header);
        g_hash_table_insert (attrs, (gpointer) "corral-format", info->format);
        secret = secret_value_new (value, -1, "text/plain");
        item = secret_item_create_sync (coll, &corral_schema, attrs, label, secret,
                                        SECRET_ITEM_CREATE_REPLACE, cancellable, &local);
        if (!item)
                return keychain_error (error, local);
        return TRUE;
}

static CorralSecretInfo *
item_info (SecretItem *item)
{
        g_autoptr (GHashTable) attrs = secret_item_get_attributes (item);
        const char *hosts = g_hash_table_lookup (attrs, "corral-hosts");
        g_auto (GStrv) list = g_strsplit (hosts ? hosts : "", ",", 17);

        return corral_secret_info_new (g_hash_table_lookup (attrs, "corral-name") ?: "",
                                       (const char *const *) list,
                                       g_hash_table_lookup (attrs, "corral-header") ?: "",
                                       g_hash_table_lookup (attrs, "corral-format") ?: "", NULL);
}

static int
cmp_info (gconstpointer a, gconstpointer b)
{
        return g_strcmp0 ((*(CorralSecretInfo *const *) a)->name,
                          (*(CorralSecretInfo *const *) b)->name);
}

GPtrArray *
corral_secret_store_list_sync (GCancellable *cancellable, GError **error)
{
        g_autoptr (SecretService) service = get_service (cancellable, error);
        g_autoptr (GError) local = NULL;
        GPtrArray *out;
        GList *items;

        if (!service)
                return NULL;
        items = search (service, NULL, SECRET_SEARCH_NONE, cancellable, &local);
        if (local) {
                g_propagate_error (error, g_steal_pointer (&local));
                return NULL;
        }
        out = g_ptr_array_new_with_free_func ((GDestroyNotify) corral_secret_info_free);
        for (GList *l = items; l; l = l->next) {
                CorralSecretInfo *info = item_info (l->data);

                if (info) /* items another program damaged are skipped, not trusted */
                        g_ptr_array_add (out, info);
        }
        free_items (items);
        g_ptr_array_sort (out, cmp_info);
        return out;
}

char **
corral_secret_store_list_session_names_sync (GCancellable *cancellable, GError **error)
{
        g_autoptr (GPtrArray) list = corral_secret_store_list_sync (cancellable, error);
        g_autoptr (GStrvBuilder) names = g_strv_builder_new ();

        if (!list)
                return NULL;
        for (guint i = 0; i < list->len; i++) {
                const CorralSecretInfo *info = g_ptr_array_index (list, i);

                if (!corral_secret_name_is_host_only (info->name))
                        g_strv_builder_add (names, info->name);
        }
        return g_strv_builder_end (names);
}

char *
corral_secret_store_lookup_sync (const char *name,
                                 CorralSecretInfo **ret_info,
                                 GCancellable *cancellable,
                                 GError **error)
{
        g_autoptr (SecretService) service = get_service (cancellable, error);
        g_autoptr (GError) local = NULL;
        g_autoptr (SecretValue) secret = NULL;
        g_autoptr (CorralSecretInfo) info = NULL;
        GList *items;
        const char *text;

        if (!service)
                return NULL;
        items = search (service, name, SECRET_SEARCH_LOAD_SECRETS, cancellable, &local);
        if (local || !items || any_locked (items)) {
                if (local)
                        g_propagate_error (error, g_steal_pointer (&local));
                else if (!items)
                        g_set_error (error, CORRAL_EGRESS_ERROR, CORRAL_EGRESS_ERROR_INVALID,
                                     _ ("No secret named “%s” in the keychain"), name);
                else
                        locked_error (error);
                free_items (items);
                return NULL;
        }
        secret = secret_item_get_secret (items->data);
        info = item_info (items->data);
        free_items (items);
        if (!secret || !info || !(text = secret_value_get_text (secret))) {
                g_set_error (error, CORRAL_EGRESS_ERROR, CORRAL_EGRESS_ERROR_KEYCHAIN,
                             _ ("The keychain entry of “%s” is damaged; set it again"), name);
                return NULL;
        }
        if (ret_info)
                *ret_info = g_steal_pointer (&info);
        return g_strdup (text);
}

gboolean
corral_secret_store_remove_sync (const char *name, GCancellable *cancellable, GError **error)
{
        g_autoptr (SecretService) service = get_service (cancellable, error);
        g_autoptr (GError) local = NULL;
        GList *items;
        gboolean ok;

        if (!service)
                return FALSE;
        items = search (service, name, SECRET_SEARCH_NONE, cancellable, &local);
        if (local) {
                g_propagate_error (error, g_steal_pointer (&local));
                return FALSE;
        }
        if (!items) {
                g_set_error (error, CORRAL_EGRESS_ERROR, CORRAL_EGRESS_ERROR_INVALID,
                             _ ("No secret named “%s” in the keychain"), name);
                return FALSE;
        }
        ok = any_locked (items) ? locked_error (error) : remove_items (items, cancellable, error);
        free_items (items);
        return ok;
}

/* Async ------------------------------------------------------------------------------------------ */

typedef struct {
        CorralSecretInfo *info;
        char *name;
        char *value;
} StoreOp;

static void
store_op_free (StoreOp *op)
{
        corral_secret_info_free (op->info);
        g_free (op->name);
        corral_secret_value_free (op->value);
        g_free (op);
}

static void
set_thread (GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
        StoreOp *op = data;
        GError *error = NULL;

        if (corral_secret_store_set_sync (op->info, op->value, cancellable, &error))
                g_task_return_boolean (task, TRUE);
        else
                g_task_return_error (task, error);
}

void
corral_secret_store_set_async (const CorralSecretInfo *info,
                               const char *value,
                               GCancellable *cancellable,
                               GAsyncReadyCallback callback,
                               gpointer user_data)
{
        g_autoptr (GTask) task = g_task_new (NULL, cancellable, callback, user_data);
        StoreOp *op = g_new0 (StoreOp, 1);
        const char *const *hosts = (const char *const *) info->hosts;

        op->info = corral_secret_info_new (info->name, hosts, info->header, info->format, NULL);
        op->value = g_strdup (value);
        g_task_set_source_tag (task, corral_secret_store_set_async);
        g_task_set_task_data (task, op, (GDestroyNotify) store_op_free);
        g_task_run_in_thread (task, set_thread);
}

gboolean
corral_secret_store_set_finish (GAsyncResult *result, GError **error)
{
        return g_task_propagate_boolean (G_TASK (result), error);
}

typedef struct {
        char *value;
        CorralSecretInfo *info;
} LookupResult;

static void
lookup_result_free (LookupResult *r)
{
        corral_secret_value_free (r->value);
        corral_secret_info_free (r->info);
        g_free (r);
}

static void
lookup_thread (GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
        StoreOp *op = data;
        GError *error = NULL;
        LookupResult *r = g_new0 (LookupResult, 1);

        r->value = corral_secret_store_lookup_sync (op->name, &r->info, cancellable, &error);
        if (r->value) {
                g_task_return_pointer (task, r, (GDestroyNotify) lookup_result_free);
        } else {
                lookup_result_free (r);
                g_task_return_error (task, error);
        }
}

void
corral_secret_store_lookup_async (const char *name,
                                  GCancellable *cancellable,
                                  GAsyncReadyCallback callback,
                                  gpointer user_data)
{
        g_autoptr (GTask) task = g_task_new (NULL, cancellable, callback, user_data);
        StoreOp *op = g_new0 (StoreOp, 1);

        op->name = g_strdup (name);
        g_task_set_source_tag (task, corral_secret_store_lookup_async);
        g_task_set_task_data (task, op, (GDestroyNotify) store_op_free);
        g_task_run_in_thread (task, lookup_thread);
}

char *
corral_secret_store_lookup_finish (GAsyncResult *result,
                                   CorralSecretInfo **ret_info,
                                   GError **error)
{
        LookupResult *r = g_task_propagate_pointer (G_TASK (result), error);
        char *value;

        if (!r)
                return NULL;
        value = g_steal_pointer (&r->value);
        if (ret_info)
                *ret_info = g_steal_pointer (&r->info);
        lookup_result_free (r);
        return value;
}
