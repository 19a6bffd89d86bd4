// /usr/lib/firefox-esr/defaults/pref/autoconfig.js in the Corral "desktop" image: Firefox runs
// /usr/lib/firefox-esr/corral.cfg (privileged, at start-up) to sign in to the VM's own proxy.
pref("general.config.filename", "corral.cfg");
pref("general.config.obscure_value", 0);
pref("general.config.sandbox_enabled", false);
