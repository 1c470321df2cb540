-- Headless Neovim as a real client of `tabench lsp` (run by test_lsp_neovim.py):
--   nvim --headless -u NONE -i NONE -c "luafile nvim_lsp_client.lua"
-- Environment: TABENCH_RUBRIC (the file to open), TABENCH_PYTHON (the interpreter), TABENCH_OUT
-- (where to write what was seen, as JSON). Written for Neovim 0.7 and later (start_client, not
-- vim.lsp.start, which 0.8 added).
local rubric = os.getenv("TABENCH_RUBRIC")
local out = os.getenv("TABENCH_OUT")
local seen = { diagnostics = {}, completion = {}, error = vim.NIL }

local function finish()
  local file = io.open(out, "w")
  file:write(vim.fn.json_encode(seen))
  file:close()
  vim.cmd("qall!")
end

local ok, problem = pcall(function()
  vim.cmd("edit " .. vim.fn.fnameescape(rubric))
  local bufnr = vim.api.nvim_get_current_buf()
  local client_id = vim.lsp.start_client({
    name = "tabench",
    cmd = { os.getenv("TABENCH_PYTHON"), "-m", "tabench_dsl", "lsp" },
    root_dir = vim.fn.fnamemodify(rubric, ":h"),
  })
  vim.lsp.buf_attach_client(bufnr, client_id)
  vim.wait(20000, function()
    return #vim.diagnostic.get(bufnr) > 0
  end, 50)
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    table.insert(seen.diagnostics, { lnum = d.lnum, col = d.col, code = d.code, message = d.message })
  end
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    position = { line = 3, character = 11 },
  }
  local replies = vim.lsp.buf_request_sync(bufnr, "textDocument/completion", params, 20000) or {}
  for _, reply in pairs(replies) do
    local items = reply.result and (reply.result.items or reply.result) or {}
    for _, item in ipairs(items) do
      table.insert(seen.completion, item.label)
    end
  end
  vim.lsp.stop_client(client_id)
end)
if not ok then
  seen.error = tostring(problem)
end
finish()
