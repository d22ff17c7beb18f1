"""ember's built-in backends. Each is a plugin registered through the `ember.backends`
entry points, exactly as a third party's is; core never imports them by name."""
