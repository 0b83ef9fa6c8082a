-- Server-side setup for the Tarantool examples: a space of orders, two stored
-- procedures, and an SQL table. gloaddriver --spawn --spawn-init orders.lua runs it
-- as admin in a private server at every start, so it is written to run twice.
local orders = box.schema.space.create('orders', {if_not_exists = true, format = {
    {name = 'id', type = 'unsigned'},
    {name = 'customer', type = 'string'},
    {name = 'qty', type = 'unsigned'},
    {name = 'status', type = 'string'},
}})
orders:create_index('pk', {if_not_exists = true})
orders:create_index('by_customer', {if_not_exists = true, unique = false,
                                    parts = {{'customer', 'string'}}})

-- Place (or replace) an order; returns the stored tuple.
function place_order(id, customer, qty)
    return box.space.orders:replace({id, customer, qty, 'new'})
end

-- Move an order on; returns nothing when the order does not exist.
function ship_order(id)
    return box.space.orders:update({id}, {{'=', 4, 'shipped'}})
end

box.execute([[CREATE TABLE IF NOT EXISTS customers (
    id INTEGER PRIMARY KEY, name TEXT NOT NULL, visits INTEGER NOT NULL)]])
