// placeholder: implemented by the store work
